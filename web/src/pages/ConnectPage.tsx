import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { Alert, Button, Code, CopyButton, Group, Stack, Tabs, Text, Title } from "@mantine/core";
import { api, unwrap } from "../api/client";
import { ErrorState, QueryState } from "../components/states";
import { useEnvPath } from "../queries";
import { useMayWrite } from "../session";
import { connectSnippets, type Endpoints } from "./connect-snippets";

/** A block of text with its copy button, named for screen readers and tests. */
function Copyable({ label, value }: { label: string; value: string }) {
  return (
    <Stack gap={4}>
      <Group justify="space-between">
        <Text fw={600} size="sm">
          {label}
        </Text>
        <CopyButton value={value}>
          {({ copied, copy }) => (
            <Button size="compact-xs" variant="default" onClick={copy} aria-label={`Copy ${label}`}>
              {copied ? "Copied" : "Copy"}
            </Button>
          )}
        </CopyButton>
      </Group>
      <Code block aria-label={label} style={{ whiteSpace: "pre-wrap", wordBreak: "break-all" }}>
        {value}
      </Code>
    </Stack>
  );
}

/** The environment's key: hidden until asked for (only an organization admin may read it), then shown with Copy. */
function EnvironmentKey() {
  const { path, base } = useEnvPath();
  const isAdmin = useMayWrite({ admin: true });
  const [shown, setShown] = useState(false);
  const key = useQuery({
    queryKey: [...base, "environment-key"],
    enabled: shown,
    gcTime: 0,
    queryFn: async () => unwrap(await api.GET("/v2/api-key/{proj_id}/{env_id}", { params: { path } })),
  });
  if (!shown)
    return (
      <Group justify="space-between">
        <Text size="sm">
          The environment key (<Code>ENV_KEY</Code> below) lets an app and a PDP check in this environment
          only.
        </Text>
        {isAdmin ? (
          <Button variant="default" onClick={() => setShown(true)}>
            Reveal the environment key
          </Button>
        ) : (
          <Text size="sm" c="dimmed">
            Only the organization&apos;s admins can reveal it.
          </Text>
        )}
      </Group>
    );
  if (key.error) return <ErrorState error={key.error} />;
  return <Copyable label="Environment key" value={key.data?.secret ?? "…"} />;
}

/** How an app uses this environment: its PDP, its key, and snippets for the SDKs, curl, OPA, AuthZEN and a PDP. */
export default function ConnectPage() {
  const { path, base } = useEnvPath();
  const status = useQuery({
    queryKey: [...base, "pdp-status"],
    queryFn: async () => unwrap(await api.GET("/v2/pdps/{proj_id}/{env_id}/status", { params: { path } })),
  });
  const endpoints = (pdpPort: number, opaPort: number): Endpoints => {
    const host = `${window.location.protocol}//${window.location.hostname}`;
    return {
      api: window.location.origin,
      pdp: `${host}:${pdpPort}`,
      opa: opaPort ? `${host}:${opaPort}` : "",
    };
  };
  return (
    <Stack>
      <Title order={1} size="h2">
        Connect your app
      </Title>
      <QueryState query={status}>
        {(s) => {
          const at = endpoints(s.pdp_port ?? 7766, s.opa_port ?? 8181);
          const snippets = connectSnippets(at);
          return (
            <>
              <Copyable label="PDP URL" value={at.pdp} />
              <Copyable label="API URL" value={at.api} />
              <EnvironmentKey />
              <Tabs defaultValue={snippets[0]!.id} keepMounted={false}>
                <Tabs.List>
                  {snippets.map((s) => (
                    <Tabs.Tab key={s.id} value={s.id}>
                      {s.label}
                    </Tabs.Tab>
                  ))}
                </Tabs.List>
                {snippets.map((s) => (
                  <Tabs.Panel key={s.id} value={s.id} pt="sm">
                    <Stack gap="xs">
                      <Text size="sm">{s.about}</Text>
                      <Copyable label={`${s.label} snippet`} value={s.code} />
                    </Stack>
                  </Tabs.Panel>
                ))}
              </Tabs>
              {!at.opa && (
                <Alert color="gray" variant="light">
                  The OPA-compatible port is off on this server (GATEHOUSE_OPA_PORT=0).
                </Alert>
              )}
            </>
          );
        }}
      </QueryState>
    </Stack>
  );
}
