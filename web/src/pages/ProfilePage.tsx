import { useState, type FormEvent } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Alert, Button, Group, Image, List, Stack, Text, TextInput, Title } from "@mantine/core";
import { api, unwrap } from "../api/client";
import { CopyBlock } from "../components/CopyBlock";
import { formText } from "../components/dialogs";
import { ErrorState, QueryState } from "../components/states";
import { notifyDone } from "../notify";
import { useMe } from "../session";

/** A form's submit with busy and error state. */
function useSubmit() {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, run };
}

/** The member's own names (any member may change them). */
function NameForm() {
  const me = useMe();
  const queryClient = useQueryClient();
  const { error, busy, run } = useSubmit();
  const save = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    void run(async () => {
      const body = {
        given_name: formText(form, "given_name") || null,
        family_name: formText(form, "family_name") || null,
      };
      queryClient.setQueryData(["me"], unwrap(await api.PATCH("/v2/members/me", { body })));
      notifyDone("Name saved");
    });
  };
  return (
    <QueryState query={me}>
      {(m) => (
        <form onSubmit={save}>
          <Stack>
            <Text size="sm" c="dimmed">
              {m.email}
            </Text>
            {error !== null && <ErrorState error={error} />}
            <Group grow>
              <TextInput
                label="First name"
                name="given_name"
                defaultValue={m.given_name ?? ""}
                autoComplete="given-name"
              />
              <TextInput
                label="Last name"
                name="family_name"
                defaultValue={m.family_name ?? ""}
                autoComplete="family-name"
              />
            </Group>
            <Group justify="flex-end">
              <Button type="submit" loading={busy}>
                Save name
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </QueryState>
  );
}

type Enrolment = { secret: string; otpauth_url: string; qr_code: string };

/** Enrol: the QR code (and its secret as text), then a code of the app confirms it and shows the recovery codes once. */
function Enrol({ onDone }: { onDone: () => void }) {
  const [enrolment, setEnrolment] = useState<Enrolment | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const { error, busy, run } = useSubmit();
  const start = () => void run(async () => setEnrolment(unwrap(await api.POST("/v2/auth/two-factor/enrol"))));
  const confirm = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const totp_code = formText(new FormData(e.currentTarget), "totp_code").replace(/\s/g, "");
    void run(async () => {
      setCodes(unwrap(await api.POST("/v2/auth/two-factor/confirm", { body: { totp_code } })).recovery_codes);
    });
  };
  if (codes)
    return (
      <Stack>
        <Alert color="green" title="Two-step verification is on">
          Keep these recovery codes somewhere safe: each logs in once without the app. They are not shown
          again.
        </Alert>
        <CopyBlock
          label="Recovery codes"
          value={codes.join("\n")}
          copyLabel="Copy the codes"
          onClose={onDone}
        />
      </Stack>
    );
  if (!enrolment)
    return (
      <Stack>
        {error !== null && <ErrorState error={error} />}
        <Group>
          <Button onClick={start} loading={busy}>
            Set up an authenticator app
          </Button>
        </Group>
      </Stack>
    );
  return (
    <form onSubmit={confirm}>
      <Stack>
        <Text size="sm">Scan the code with your authenticator app, then enter the 6 digits it shows.</Text>
        <Image src={enrolment.qr_code} alt="QR code for the authenticator app" w={200} h={200} />
        <Text size="sm">
          Or enter this key by hand: <code aria-label="Authenticator key">{enrolment.secret}</code>
        </Text>
        {error !== null && <ErrorState error={error} />}
        <TextInput
          label="Code from the app"
          name="totp_code"
          inputMode="numeric"
          autoComplete="one-time-code"
          required
        />
        <Group justify="flex-end">
          <Button type="submit" loading={busy}>
            Turn on
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

/** Remove the factor, proven by one of its codes or a recovery code. */
function Remove({ onDone }: { onDone: () => void }) {
  const { error, busy, run } = useSubmit();
  const remove = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const code = formText(new FormData(e.currentTarget), "code").replace(/\s/g, "");
    const body = /^\d{6}$/.test(code) ? { totp_code: code } : { recovery_code: code };
    void run(async () => {
      unwrap(await api.DELETE("/v2/auth/two-factor", { body }));
      notifyDone("Two-step verification removed");
      onDone();
    });
  };
  return (
    <form onSubmit={remove}>
      <Stack>
        {error !== null && <ErrorState error={error} />}
        <Group align="flex-end">
          <TextInput
            label="A code from the app, or a recovery code"
            name="code"
            required
            autoComplete="off"
          />
          <Button type="submit" color="red" variant="light" loading={busy}>
            Remove
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

function TwoFactor() {
  const status = useQuery({
    queryKey: ["two-factor"],
    queryFn: async () => unwrap(await api.GET("/v2/auth/two-factor")),
  });
  const refresh = () => void status.refetch();
  return (
    <QueryState query={status}>
      {(s) => (
        <Stack>
          <List size="sm">
            <List.Item>
              Two-step verification is {s.enabled ? "on" : "off"} for your password logins.
            </List.Item>
            {s.enabled && <List.Item>{s.recovery_remaining} recovery codes left.</List.Item>}
            {s.required && !s.enabled && (
              <List.Item>This organization requires it: set it up to reach its pages.</List.Item>
            )}
          </List>
          {s.enabled ? <Remove onDone={refresh} /> : <Enrol onDone={refresh} />}
        </Stack>
      )}
    </QueryState>
  );
}

/** Settings → Your profile: one's own name and second factor. */
export default function ProfilePage() {
  return (
    <Stack maw={560}>
      <Title order={1} size="h2">
        Your profile
      </Title>
      <NameForm />
      <Title order={2} size="h3">
        Two-step verification
      </Title>
      <TwoFactor />
    </Stack>
  );
}
