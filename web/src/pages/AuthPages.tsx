import { useState, type FormEvent, type ReactNode } from "react";
import { useNavigate, useParams, useSearchParams } from "react-router";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import {
  Button,
  Center,
  NativeSelect,
  Paper,
  PasswordInput,
  Stack,
  Text,
  TextInput,
  Title,
} from "@mantine/core";
import { api, setCsrfToken, unwrap } from "../api/client";
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

export function LoginPage() {
  const [params] = useSearchParams();
  const next = params.get("next");
  // Only a path of this dashboard: a link to /login must not send a member elsewhere after logging in.
  const back = next?.startsWith("/") && !next.startsWith("//") ? next : undefined;
  const { error, busy, submit } = useOpenSession(back ?? "/");
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    void submit(async () =>
      unwrap(
        await api.POST("/v2/auth/login", {
          body: { email: field(form, "email"), password: field(form, "password") },
        }),
      ),
    );
  };
  return (
    <AuthCard
      title="Log in to Gatehouse"
      intro={
        back &&
        "Your session has ended or you are not logged in yet. Log in to return to the page you were on."
      }
    >
      <form onSubmit={onSubmit}>
        <Stack>
          {error !== null && <ErrorState error={error} />}
          <RegionPicker />
          <TextInput label="E-mail" name="email" type="email" autoComplete="username" required />
          <PasswordInput label="Password" name="password" autoComplete="current-password" required />
          <Button type="submit" loading={busy}>
            Log in
          </Button>
        </Stack>
      </form>
    </AuthCard>
  );
}

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
