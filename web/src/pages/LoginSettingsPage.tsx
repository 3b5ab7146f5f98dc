import { useState, type FormEvent } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import {
  Button,
  Checkbox,
  Code,
  Group,
  NativeSelect,
  PasswordInput,
  Stack,
  Text,
  TextInput,
  Title,
} from "@mantine/core";
import { api, unwrap } from "../api/client";
import { formText } from "../components/dialogs";
import { ErrorState, QueryState } from "../components/states";
import { notifyDone } from "../notify";
import { useOrg } from "../org";

type Settings = NonNullable<Awaited<ReturnType<typeof load>>>;
const load = async (orgId: string) =>
  unwrap(await api.GET("/v2/orgs/{org_id}/login-settings", { params: { path: { org_id: orgId } } }));

const ACCESS = ["read", "write", "admin", "no_access"] as const;

/** The SSO form's fields: the provider, its client, who may sign in and what new members get. */
function SsoFields({ sso }: { sso: Settings["sso"] }) {
  return (
    <>
      <TextInput
        label="Provider name"
        name="provider_name"
        description='Shown as "Sign in with …"'
        defaultValue={sso?.provider_name}
        required
      />
      <TextInput
        label="Issuer URL"
        name="issuer"
        description="Its /.well-known/openid-configuration is read"
        defaultValue={sso?.issuer}
        required
      />
      <TextInput label="Client ID" name="client_id" defaultValue={sso?.client_id} required />
      <PasswordInput
        label="Client secret"
        name="client_secret"
        description={
          sso ? "Stored and never shown; leave empty to keep it" : "Stored sealed, never shown again"
        }
        required={!sso}
        autoComplete="off"
      />
      <TextInput
        label="Allowed e-mail domains"
        name="allowed_domains"
        description="Comma-separated; people with a verified e-mail of these domains become members on their first sign-in"
        defaultValue={sso?.allowed_domains.join(", ")}
      />
      <NativeSelect
        label="Access of new members"
        name="new_member_access"
        data={[...ACCESS]}
        defaultValue={sso?.new_member_access ?? "read"}
      />
      <Checkbox
        label="Require single sign-on (no password logins)"
        name="require_sso"
        defaultChecked={sso?.require_sso}
      />
      <TextInput
        label="Break-glass admin"
        name="break_glass_email"
        description="An organization admin who may still log in with a password, should the provider fail"
        defaultValue={sso?.break_glass_email ?? ""}
      />
      {sso && (
        <Text size="sm">
          Redirect URI to register with the provider: <Code>{sso.redirect_uri}</Code>
        </Text>
      )}
    </>
  );
}

function SettingsForm({ settings }: { settings: Settings }) {
  const org = useOrg();
  const queryClient = useQueryClient();
  const [ssoOn, setSsoOn] = useState(settings.sso !== null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const save = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const secret = formText(form, "client_secret");
    const sso = ssoOn
      ? {
          provider_name: formText(form, "provider_name"),
          issuer: formText(form, "issuer"),
          client_id: formText(form, "client_id"),
          ...(secret && { client_secret: secret }),
          allowed_domains: formText(form, "allowed_domains")
            .split(/[\s,]+/)
            .filter(Boolean),
          new_member_access: formText(form, "new_member_access") as (typeof ACCESS)[number],
          require_sso: form.get("require_sso") !== null,
          break_glass_email: formText(form, "break_glass_email") || null,
        }
      : null;
    setBusy(true);
    setError(null);
    try {
      const saved = unwrap(
        await api.PUT("/v2/orgs/{org_id}/login-settings", {
          params: { path: { org_id: org.id } },
          body: { require_two_factor: form.get("require_two_factor") !== null, sso },
        }),
      );
      queryClient.setQueryData([org.id, "login-settings"], saved);
      void queryClient.invalidateQueries({ queryKey: ["auth", "sso"] });
      notifyDone("Login settings saved");
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={(e) => void save(e)}>
      <Stack>
        {error !== null && <ErrorState error={error} />}
        <Checkbox
          label="Require two-step verification for password logins"
          description="Members without it reach only their profile until they set it up"
          name="require_two_factor"
          defaultChecked={settings.require_two_factor}
        />
        <Title order={2} size="h3">
          Single sign-on (OpenID Connect)
        </Title>
        <Checkbox
          label="Sign in with an identity provider"
          checked={ssoOn}
          onChange={(e) => setSsoOn(e.currentTarget.checked)}
        />
        {ssoOn && <SsoFields sso={settings.sso} />}
        <Group justify="flex-end">
          <Button type="submit" loading={busy}>
            Save
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

/** Settings → Login and SSO: the organization's identity provider and second-factor policy (admins). */
export default function LoginSettingsPage() {
  const org = useOrg();
  const current = useQuery({ queryKey: [org.id, "login-settings"], queryFn: () => load(org.id) });
  return (
    <Stack maw={560}>
      <Title order={1} size="h2">
        Login and SSO
      </Title>
      <QueryState query={current}>{(settings) => <SettingsForm settings={settings} />}</QueryState>
    </Stack>
  );
}
