import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Button, Group, NumberInput, Stack, Text, TextInput, Title } from "@mantine/core";
import { useState, type FormEvent } from "react";
import { api, unwrap } from "../api/client";
import { formText } from "../components/dialogs";
import { ErrorState, QueryState } from "../components/states";
import { useOrg } from "../org";
import { useMayWrite } from "../session";
import { notifyDone } from "../notify";

/** Settings → Organization: its name and the rate limit of its API keys. */
export default function OrganizationPage() {
  const org = useOrg();
  const canWrite = useMayWrite({ admin: true });
  const queryClient = useQueryClient();
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const current = useQuery({
    queryKey: [org.id, "organization"],
    queryFn: async () => unwrap(await api.GET("/v2/orgs/{org_id}", { params: { path: { org_id: org.id } } })),
  });
  const save = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const limit = formText(form, "rate_limit_per_minute");
    setBusy(true);
    setError(null);
    try {
      unwrap(
        await api.PATCH("/v2/orgs/{org_id}", {
          params: { path: { org_id: org.id } },
          body: {
            name: formText(form, "name"),
            // Empty keeps the server's default; the API takes only a number.
            ...(limit && { settings: { rate_limit_per_minute: Number(limit) } }),
          },
        }),
      );
      // The name shows in the switcher, which reads the session.
      await queryClient.invalidateQueries({ queryKey: ["session"] });
      await queryClient.invalidateQueries({ queryKey: [org.id, "organization"] });
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
                description="calls per minute per API key; empty: the server's default"
                defaultValue={
                  typeof o.settings["rate_limit_per_minute"] === "number"
                    ? o.settings["rate_limit_per_minute"]
                    : ""
                }
                min={1}
                allowDecimal={false}
                hideControls
                readOnly={!canWrite}
              />
              {canWrite && (
                <Group justify="flex-end">
                  <Button type="submit" loading={busy}>
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
