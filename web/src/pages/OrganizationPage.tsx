import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Button, Group, NumberInput, Stack, Text, TextInput, Title } from "@mantine/core";
import { useState, type FormEvent } from "react";
import { api, unwrap } from "../api/client";
import { formText } from "../components/dialogs";
import { ErrorState, QueryState } from "../components/states";
import { useOrg } from "../org";
import { useMayWrite } from "../session";
import { notifyDone } from "../notify";

/** The server refuses lower limits (422): one typo must not leave every key one call a minute. */
const MIN_RATE_LIMIT = 60;

/** Why the typed rate limit cannot be saved, or undefined (empty keeps the server's default). */
function rateLimitProblem(value: string | number): string | undefined {
  if (value === "") return undefined;
  const limit = Number(value);
  if (!Number.isInteger(limit)) return "A whole number of requests per minute";
  if (limit < MIN_RATE_LIMIT)
    return `At least ${MIN_RATE_LIMIT} per minute: below that, the organization's API keys would be all but locked out`;
  return undefined;
}

/** Settings → Organization: its name and the rate limit of its API keys. */
export default function OrganizationPage() {
  const org = useOrg();
  const canWrite = useMayWrite({ admin: true });
  const queryClient = useQueryClient();
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  // The limit as typed (null: as stored); checked as it is typed, and again before saving.
  const [limit, setLimit] = useState<string | number | null>(null);
  const current = useQuery({
    queryKey: [org.id, "organization"],
    queryFn: async () => unwrap(await api.GET("/v2/orgs/{org_id}", { params: { path: { org_id: org.id } } })),
  });
  const stored = current.data?.settings["rate_limit_per_minute"];
  const shown = limit ?? (typeof stored === "number" ? stored : "");
  const problem = rateLimitProblem(shown);
  const save = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    if (problem) return;
    const form = new FormData(e.currentTarget);
    setBusy(true);
    setError(null);
    try {
      unwrap(
        await api.PATCH("/v2/orgs/{org_id}", {
          params: { path: { org_id: org.id } },
          body: {
            name: formText(form, "name"),
            // Empty keeps the server's default; the API takes only a number.
            ...(shown !== "" && { settings: { rate_limit_per_minute: Number(shown) } }),
          },
        }),
      );
      // The name shows in the switcher, which reads the session.
      await queryClient.invalidateQueries({ queryKey: ["session"] });
      await queryClient.invalidateQueries({ queryKey: [org.id, "organization"] });
      setLimit(null);
      notifyDone("Organization saved");
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Stack maw={520}>
      <Title order={1} size="h2">
        Organization
      </Title>
      <QueryState query={current}>
        {(o) => (
          <form onSubmit={(e) => void save(e)}>
            <Stack>
              {error !== null && <ErrorState error={error} />}
              <Text size="sm" c="dimmed">
                Key {o.key}, region {o.region}
              </Text>
              <TextInput label="Name" name="name" defaultValue={o.name} required readOnly={!canWrite} />
              <NumberInput
                label="Rate limit per minute"
                name="rate_limit_per_minute"
                description={`How many requests each API key of this organization may make per minute (at least ${MIN_RATE_LIMIT}); more are refused with 429 until the next minute. Members' sessions in this dashboard are limited apart. Empty: the server's default.`}
                value={shown}
                onChange={setLimit}
                error={problem}
                // Mantine would otherwise clamp a typo such as -5 to the minimum and save that.
                clampBehavior="none"
                allowDecimal={false}
                hideControls
                readOnly={!canWrite}
              />
              {canWrite && (
                <Group justify="flex-end">
                  <Button type="submit" loading={busy} disabled={problem !== undefined}>
                    Save
                  </Button>
                </Group>
              )}
            </Stack>
          </form>
        )}
      </QueryState>
    </Stack>
  );
}
