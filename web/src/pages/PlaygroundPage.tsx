import { useState, type FormEvent } from "react";
import { useQuery } from "@tanstack/react-query";
import {
  Autocomplete,
  Button,
  Card,
  Group,
  JsonInput,
  Select,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Title,
} from "@mantine/core";
import { api, unwrap } from "../api/client";
import { parseAttributes } from "../components/fields";
import { formText } from "../components/dialogs";
import { DecisionView, Verdict, type Reason } from "../components/reason";
import { DataTable } from "../components/tables";
import { ErrorState } from "../components/states";
import { FormProblem, withSentence } from "../components/sentences";
import { useOrg, usePlace } from "../org";

type CheckAnswer = { allow: boolean; reason: Reason; explanation: string; revision: number };
type Result =
  | { kind: "check"; answer: CheckAnswer }
  | { kind: "bulk"; actions: string[]; answers: CheckAnswer[] }
  | {
      kind: "permissions";
      revision: number;
      permissions: Record<string, { permissions: string[]; roles: string[] }>;
    };

/** The page's names of the check's fields, for the API's validation messages. */
const FIELDS: Record<string, string> = {
  user: "The user",
  "user.key": "The user",
  "user.attributes": "The user attributes",
  action: "The action",
  resource: "The resource",
  "resource.type": "The resource type",
  "resource.key": "The instance key",
  "resource.tenant": "The tenant",
  "resource.attributes": "The resource attributes",
  context: "The context",
  tenants: "The tenant",
};

/** A JSON object field of the form, or an error naming the field. */
function jsonObject(data: FormData, name: string, label: string): Record<string, unknown> {
  try {
    return parseAttributes(formText(data, name));
  } catch {
    throw new FormProblem(`${label} must be a JSON object, such as {"department": "legal"}.`);
  }
}

/** What the form lacks for a request of this kind, as a sentence; undefined when it is complete. */
function missing(kind: Result["kind"], data: FormData, resourceType: string | null): string | undefined {
  if (!formText(data, "user")) return "Pick a user or type a user key.";
  if (kind !== "permissions" && !resourceType) return "Pick a resource type.";
  if (kind === "check" && !formText(data, "action")) return "Pick an action or type its key.";
  return undefined;
}

function JsonField({ label, name }: { label: string; name: string }) {
  return (
    <JsonInput
      label={label}
      name={name}
      description="a JSON object"
      validationError="Not valid JSON"
      formatOnBlur
      autosize
      minRows={2}
    />
  );
}

/** Pick a user, an action and a resource: the decision, why, and at which revision; or all actions, or all rights. */
export default function PlaygroundPage() {
  const org = useOrg();
  const { proj = "", env = "" } = usePlace();
  const path = { proj_id: proj, env_id: env };
  const [resourceType, setResourceType] = useState<string | null>(null);
  const [userSearch, setUserSearch] = useState("");
  const [result, setResult] = useState<Result | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const resources = useQuery({
    queryKey: [org.id, proj, env, "resources-all"],
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/schema/{proj_id}/{env_id}/resources", {
          params: { path, query: { per_page: 100 } },
        }),
      ),
  });
  const users = useQuery({
    queryKey: [org.id, proj, env, "users-pick", userSearch],
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/facts/{proj_id}/{env_id}/users", {
          params: { path, query: { per_page: 20, ...(userSearch && { search: userSearch }) } },
        }),
      ),
  });
  const resourceList = Array.isArray(resources.data) ? resources.data : (resources.data?.data ?? []);
  const actions = Object.keys(resourceList.find((r) => r.key === resourceType)?.actions ?? {});

  const run = async (kind: Result["kind"], form: HTMLFormElement) => {
    setError(null);
    setBusy(true);
    try {
      const data = new FormData(form);
      const lacking = missing(kind, data, resourceType);
      if (lacking) throw new FormProblem(lacking);
      const userAttributes = jsonObject(data, "user_attributes", "The user attributes");
      const user = {
        key: formText(data, "user"),
        ...(Object.keys(userAttributes).length > 0 && { attributes: userAttributes }),
      };
      const context = jsonObject(data, "context", "The context");
      const resourceAttributes = jsonObject(data, "resource_attributes", "The resource attributes");
      const key = formText(data, "instance");
      const tenant = formText(data, "tenant");
      const resource = {
        type: resourceType ?? "",
        tenant: tenant || "default",
        ...(key && { key }),
        ...(Object.keys(resourceAttributes).length > 0 && { attributes: resourceAttributes }),
      };
      if (kind === "permissions") {
        const answer = unwrap(
          await api.POST("/v2/pdps/{proj_id}/{env_id}/user-permissions", {
            params: { path },
            // Without a tenant typed in, every tenant the user is in.
            body: { user, context, ...(tenant && { tenants: [tenant] }) },
          }),
        );
        setResult({ kind, revision: answer.revision, permissions: answer.permissions });
      } else if (kind === "bulk") {
        const body = actions.map((action) => ({ user, action, resource, context }));
        const answer = unwrap(
          await api.POST("/v2/pdps/{proj_id}/{env_id}/allowed/bulk", { params: { path }, body }),
        );
        setResult({ kind, actions, answers: answer.allow as CheckAnswer[] });
      } else {
        const answer = unwrap(
          await api.POST("/v2/pdps/{proj_id}/{env_id}/allowed", {
            params: { path },
            body: { user, action: formText(data, "action"), resource, context },
          }),
        );
        setResult({ kind, answer: answer as CheckAnswer });
      }
    } catch (e) {
      setError(withSentence(e, FIELDS));
      setResult(null);
    } finally {
      setBusy(false);
    }
  };
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const submitter = (e.nativeEvent as SubmitEvent).submitter as HTMLButtonElement | null;
    void run((submitter?.value ?? "check") as Result["kind"], e.currentTarget);
  };

  return (
    <Stack>
      <Title order={1} size="h2">
        Check playground
      </Title>
      <form onSubmit={submit} aria-label="Check">
        <Stack>
          <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
            <Autocomplete
              label="User"
              name="user"
              placeholder="user key"
              value={userSearch}
              onChange={setUserSearch}
              data={[...new Set((users.data?.data ?? []).map((u) => u.key))]}
            />
            <Select
              label="Resource type"
              placeholder="pick a resource type"
              value={resourceType}
              onChange={setResourceType}
              // Picking the chosen type again keeps it; the clear button empties the box.
              allowDeselect={false}
              clearable
              clearButtonProps={{
                "aria-label": "Clear the resource type",
                "aria-hidden": false,
                tabIndex: 0,
              }}
              data={resourceList.map((r) => ({
                value: r.key,
                label: r.name ? `${r.name} (${r.key})` : r.key,
              }))}
            />
            <Autocomplete label="Action" name="action" placeholder="action key" data={actions} />
            <TextInput label="Instance key" name="instance" placeholder="none: the resource type" />
            <TextInput
              label="Tenant"
              name="tenant"
              placeholder="default"
              description="checks: default when empty; what this user can do: every tenant when empty"
            />
          </SimpleGrid>
          <SimpleGrid cols={{ base: 1, sm: 3 }}>
            <JsonField label="User attributes" name="user_attributes" />
            <JsonField label="Resource attributes" name="resource_attributes" />
            <JsonField label="Context" name="context" />
          </SimpleGrid>
          <Group>
            <Button type="submit" value="check" loading={busy}>
              Check
            </Button>
            <Button type="submit" value="bulk" variant="light" disabled={actions.length === 0}>
              Check every action
            </Button>
            <Button type="submit" value="permissions" variant="light">
              What can this user do
            </Button>
          </Group>
        </Stack>
      </form>
      {error !== null && <ErrorState error={error} />}
      {result && <ResultView result={result} />}
    </Stack>
  );
}

function ResultView({ result }: { result: Result }) {
  if (result.kind === "check") {
    return (
      <Card withBorder role="region" aria-label="Decision">
        <Stack gap="xs">
          <DecisionView allow={result.answer.allow} reason={result.answer.reason} />
          <Text size="sm" c="dimmed">
            Decided at environment revision {result.answer.revision}.
          </Text>
        </Stack>
      </Card>
    );
  }
  if (result.kind === "bulk") {
    return (
      <DataTable
        label="Decisions"
        columns={["Action", "Decision", "Why", "Revision"]}
        rows={result.answers.map((answer, i) => ({ ...answer, action: result.actions[i] }))}
        rowKey={(_, i) => String(i)}
        cells={(a) => [a.action, <Verdict allow={a.allow} />, a.explanation, a.revision]}
      />
    );
  }
  return (
    <Stack gap="xs">
      <Text size="sm" c="dimmed">
        At environment revision {result.revision}.
      </Text>
      <DataTable
        label="Permissions"
        columns={["Where", "Roles", "Permissions"]}
        rows={Object.entries(result.permissions)}
        rowKey={([where]) => where}
        cells={([where, p]) => [where, p.roles.join(", "), p.permissions.join(", ")]}
        emptyRow="No permission."
      />
    </Stack>
  );
}
