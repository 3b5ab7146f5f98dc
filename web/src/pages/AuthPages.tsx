import { useState, type FormEvent, type ReactNode } from "react";
import { useNavigate, useParams, useSearchParams } from "react-router";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import {
  Anchor,
  Button,
  Center,
  Divider,
  NativeSelect,
  Paper,
  PasswordInput,
  Stack,
  Text,
  TextInput,
  Title,
} from "@mantine/core";
import { api, ApiError, setCsrfToken, unwrap } from "../api/client";
import { ErrorState } from "../components/states";

type Opened = { csrf_token: string };

/** The form every way in shares: submit, show the API's error, then go to the dashboard logged in. */
function useOpenSession(next: string) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (call: () => Promise<Opened>) => {
    setBusy(true);
    setError(null);
    try {
      const session = await call();
      setCsrfToken(session.csrf_token);
      queryClient.clear();
      await navigate(next, { replace: true });
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, submit };
}

function AuthCard({ title, intro, children }: { title: string; intro?: ReactNode; children: ReactNode }) {
  return (
    <Center mih="100vh" p="md" component="main">
      <Paper withBorder shadow="sm" p="xl" w={420} radius="md">
        <Stack>
          <Title order={1} size="h2">
            {title}
          </Title>
          {intro && <Text c="dimmed">{intro}</Text>}
          {children}
        </Stack>
      </Paper>
    </Center>
  );
}

function NameFields() {
  return (
    <>
      <TextInput label="First name" name="first_name" autoComplete="given-name" />
      <TextInput label="Last name" name="last_name" autoComplete="family-name" />
    </>
  );
}

const field = (form: FormData, name: string) => String(form.get(name) ?? "");
const optional = (form: FormData, name: string) => field(form, name) || undefined;

/**
 * Where the person's organization lives: each region has its own deployment and accounts, so choosing another
 * region goes to that region's login page (docs/regions.md). Shown only where there are several regions.
 */
function RegionPicker() {
  const { data } = useQuery({
    queryKey: ["auth", "regions"],
    queryFn: async () => unwrap(await api.GET("/v2/auth/regions")),
    staleTime: Infinity,
  });
  if (!data || data.regions.length < 2) return null;
  return (
    <NativeSelect
      label="Region of your organization"
      value={data.region}
      data={data.regions.map((r) => ({ value: r.region, label: `${r.region} (${r.api_url})` }))}
      onChange={(e) => {
        const target = data.regions.find((r) => r.region === e.currentTarget.value);
        if (target && target.region !== data.region) window.location.assign(`${target.api_url}/login`);
      }}
    />
  );
}

/** "Sign in with …" for each organization with single sign-on: a full-page visit to its provider. */
function SsoButtons({ next }: { next: string | undefined }) {
  const { data } = useQuery({
    queryKey: ["auth", "sso"],
    queryFn: async () => unwrap(await api.GET("/v2/auth/sso/providers")),
    staleTime: Infinity,
  });
  if (!data || data.length === 0) return null;
  return (
    <Stack gap="xs">
      {data.map((p) => (
        <Button
          key={p.organization_key}
          component="a"
          variant="default"
          href={next ? `${p.login_url}?next=${encodeURIComponent(next)}` : p.login_url}
        >
          Sign in with {p.provider_name}
        </Button>
      ))}
      <Divider label="or with your password" labelPosition="center" />
    </Stack>
  );
}

/** The second step of a password login: the authenticator's code, or a recovery code. */
function SecondFactorFields({ recovery, onSwitch }: { recovery: boolean; onSwitch: () => void }) {
  return (
    <>
      {recovery ? (
        <TextInput label="Recovery code" name="recovery_code" autoComplete="off" required autoFocus />
      ) : (
        <TextInput
          label="Authentication code"
          description="The 6 digits your authenticator app shows for Gatehouse"
          name="totp_code"
          inputMode="numeric"
          autoComplete="one-time-code"
          required
          autoFocus
        />
      )}
      <Anchor component="button" type="button" size="sm" onClick={onSwitch}>
        {recovery ? "Use the authenticator app instead" : "Use a recovery code instead"}
      </Anchor>
    </>
  );
}

export function LoginPage() {
  const [params] = useSearchParams();
  const next = params.get("next");
  const ssoError = params.get("sso_error");
  // Only a path of this dashboard: a link to /login must not send a member elsewhere after logging in.
  const back = next?.startsWith("/") && !next.startsWith("//") ? next : undefined;
  const { error, busy, submit } = useOpenSession(back ?? "/");
  // After the right password of a member with a second factor: the same form asks for its code.
  const [credentials, setCredentials] = useState<{ email: string; password: string } | null>(null);
  const [recovery, setRecovery] = useState(false);
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const given = credentials ?? { email: field(form, "email"), password: field(form, "password") };
    const code = credentials
      ? recovery
        ? { recovery_code: field(form, "recovery_code") }
        : { totp_code: field(form, "totp_code").replace(/\s/g, "") }
      : {};
    void submit(async () => {
      try {
        return unwrap(await api.POST("/v2/auth/login", { body: { ...given, ...code } }));
      } catch (err) {
        if (err instanceof ApiError && err.code === "TWO_FACTOR_REQUIRED") {
          setCredentials(given);
          throw new SecondStep();
        }
        throw err;
      }
    });
  };
  return (
    <AuthCard
      title={credentials ? "Two-step verification" : "Log in to Gatehouse"}
      intro={
        credentials
          ? `Enter a code for ${credentials.email}.`
          : back &&
            "Your session has ended or you are not logged in yet. Log in to return to the page you were on."
      }
    >
      <form onSubmit={onSubmit}>
        <Stack>
          {ssoError !== null && !credentials && (
            <ErrorState error={new ApiError(401, "Single sign-on failed", ssoError)} />
          )}
          {error !== null && !(error instanceof SecondStep) && <ErrorState error={error} />}
          {credentials ? (
            <SecondFactorFields recovery={recovery} onSwitch={() => setRecovery(!recovery)} />
          ) : (
            <>
              <RegionPicker />
              <SsoButtons next={back} />
              <TextInput label="E-mail" name="email" type="email" autoComplete="username" required />
              <PasswordInput label="Password" name="password" autoComplete="current-password" required />
            </>
          )}
          <Button type="submit" loading={busy}>
            {credentials ? "Verify" : "Log in"}
          </Button>
        </Stack>
      </form>
    </AuthCard>
  );
}

/** Not an error: the password was right and the form now asks for the second factor. */
class SecondStep extends Error {}

export function SetupPage() {
  const { token = "" } = useParams();
  const { error, busy, submit } = useOpenSession("/");
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    void submit(async () =>
      unwrap(
        await api.POST("/v2/auth/setup", {
          body: {
            setup_token: token,
            email: field(form, "email"),
            password: field(form, "password"),
            first_name: optional(form, "first_name"),
            last_name: optional(form, "last_name"),
          },
        }),
      ),
    );
  };
  return (
    <AuthCard
      title="Set up Gatehouse"
      intro="Create the owner account: it administers the first organization. This link works once."
    >
      <form onSubmit={onSubmit}>
        <Stack>
          {error !== null && <ErrorState error={error} />}
          <TextInput label="E-mail" name="email" type="email" autoComplete="username" required />
          <NameFields />
          <PasswordInput
            label="Password"
            name="password"
            description="12 characters or more"
            autoComplete="new-password"
            required
          />
          <Button type="submit" loading={busy}>
            Create the owner account
          </Button>
        </Stack>
      </form>
    </AuthCard>
  );
}

export function InvitePage() {
  const { code = "" } = useParams();
  const { error, busy, submit } = useOpenSession("/");
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    void submit(async () =>
      unwrap(
        await api.POST("/v2/auth/invites/accept", {
          body: {
            invite_code: code,
            password: field(form, "password"),
            first_name: optional(form, "first_name"),
            last_name: optional(form, "last_name"),
          },
        }),
      ),
    );
  };
  return (
    <AuthCard
      title="Join an organization"
      intro="You were invited to Gatehouse. Choose a password to accept; if you already log in to Gatehouse with this e-mail, enter your current password."
    >
      <form onSubmit={onSubmit}>
        <Stack>
          {error !== null && <ErrorState error={error} />}
          <NameFields />
          <PasswordInput
            label="Password"
            name="password"
            description="12 characters or more"
            autoComplete="new-password"
            required
          />
          <Button type="submit" loading={busy}>
            Accept the invite
          </Button>
        </Stack>
      </form>
    </AuthCard>
  );
}
