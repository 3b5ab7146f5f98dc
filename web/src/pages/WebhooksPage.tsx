import { useState } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Badge, Button, Group, Modal, MultiSelect, Stack, Text, TextInput, Textarea } from "@mantine/core";
import { useScopeFields } from "../components/scope-fields";
import { api, unwrap } from "../api/client";
import { CopyBlock } from "../components/CopyBlock";
import { FormModal, formText } from "../components/dialogs";
import { Empty, QueryState } from "../components/states";
import { useOrg } from "../org";
import { notifyError } from "../notify";
import { named } from "../components/user-text";
import { DataTable, PageHead, RowButton } from "../components/tables";
import { useEnvironments, useProjects } from "../queries";
import { DeliveryLog } from "./WebhookDeliveries";

type Webhook = {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  disabled_reason?: string;
  project_id?: string;
  environment_id?: string;
  description?: string;
};

/** The event types of docs/events.md, then their groups and every event. */
const EVENT_TYPES = [
  ...["user", "tenant", "role_assignment", "resource_instance", "relationship_tuple"].map(
    (t) => `facts.${t}`,
  ),
  ...["resource", "role", "condition_set", "condition_set_rule", "proxy_config"].map((t) => `schema.${t}`),
  "member.granted",
  "member.revoked",
  "member.removed",
  "invite.created",
  "invite.cancelled",
  "api_key.created",
  "api_key.rotated",
  "api_key.deleted",
  "task.finished",
  "environment.copied",
];
const EVENT_CHOICES = [
  ...EVENT_TYPES,
  ...[...new Set(EVENT_TYPES.map((t) => t.split(".")[0]))].map((group) => `${group}.*`),
  "*",
];

/** The organization's webhooks: list, create (secret shown once), enable or disable, delete, delivery log. */
export default function WebhooksPage() {
  const org = useOrg();
  const queryClient = useQueryClient();
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<Webhook | null>(null);
  const [log, setLog] = useState<Webhook | null>(null);
  const hooks = useQuery({
    queryKey: [org.id, "webhooks"],
    queryFn: async () => unwrap(await api.GET("/v2/webhooks", { params: { query: { per_page: 100 } } })),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: [org.id, "webhooks"] });
  const setEnabled = async (hook: Webhook, enabled: boolean) => {
    try {
      unwrap(
        await api.PATCH("/v2/webhooks/{webhook_id}", {
          params: { path: { webhook_id: hook.id } },
          body: { enabled },
        }),
      );
      await refresh();
    } catch (e) {
      notifyError(e);
    }
  };

  return (
    <Stack>
      <PageHead title="Webhooks" action={<Button onClick={() => setCreating(true)}>New webhook</Button>} />
      <QueryState query={hooks}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty>No webhook yet.</Empty>
          ) : (
            <DataTable
              label="Webhooks"
              columns={["URL", "Events", "Scope", "State", "Actions"]}
              rows={page.data}
              rowKey={(hook) => hook.id}
              cells={(hook) => [
                <Stack gap={2} key="url">
                  <Text size="sm">{hook.url}</Text>
                  {hook.description && (
                    <Text size="xs" c="dimmed">
                      {hook.description}
                    </Text>
                  )}
                </Stack>,
                hook.events.join(", "),
                <Scope key="scope" hook={hook} />,
                hook.enabled ? (
                  <Badge color="teal" variant="light">
                    enabled
                  </Badge>
                ) : (
                  <Stack gap={2}>
                    <Badge color="gray" variant="light">
                      disabled
                    </Badge>
                    {hook.disabled_reason && <Text size="xs">{hook.disabled_reason}</Text>}
                  </Stack>
                ),
                <Group gap="xs" wrap="nowrap" key="actions">
                  <RowButton label={`Deliveries of ${hook.url}`} onClick={() => setLog(hook)}>
                    Deliveries
                  </RowButton>
                  <RowButton
                    label={`${hook.enabled ? "Disable" : "Enable"} ${hook.url}`}
                    onClick={() => void setEnabled(hook, !hook.enabled)}
                  >
                    {hook.enabled ? "Disable" : "Enable"}
                  </RowButton>
                  <RowButton label={`Delete ${hook.url}`} danger onClick={() => setDeleting(hook)}>
                    Delete
                  </RowButton>
                </Group>,
              ]}
            />
          )
        }
      </QueryState>
      {creating && (
        <CreateWebhookModal
          onClose={() => setCreating(false)}
          onCreated={async (created) => {
            await refresh();
            setSecret(created);
          }}
        />
      )}
      {secret !== null && (
        <Modal opened onClose={() => setSecret(null)} title="Signing secret" centered size="lg">
          <Stack>
            <Text size="sm">Copy it now: it is not shown again.</Text>
            <CopyBlock
              label="Signing secret"
              value={secret}
              copyLabel="Copy the secret"
              onClose={() => setSecret(null)}
            />
          </Stack>
        </Modal>
      )}
      {log && (
        <DeliveryLog
          webhookId={log.id}
          title={named`Deliveries to ${log.url}`}
          onClose={() => setLog(null)}
        />
      )}
      {deleting && (
        <FormModal
          title={named`Delete the webhook to ${deleting.url}`}
          opened
          onClose={() => setDeleting(null)}
          submitLabel="Delete"
          danger
          onSubmit={async () => {
            unwrap(
              await api.DELETE("/v2/webhooks/{webhook_id}", {
                params: { path: { webhook_id: deleting.id } },
              }),
            );
            await refresh();
          }}
        >
          <Text size="sm">
            No more events are sent to it, and its delivery log goes too. This cannot be undone.
          </Text>
        </FormModal>
      )}
    </Stack>
  );
}

/** The organization, or the project and environment (keys) whose events are sent. */
function Scope({ hook }: { hook: Webhook }) {
  const projects = useProjects();
  const envs = useEnvironments(hook.project_id);
  if (!hook.environment_id) return "organization";
  const project = projects.data?.find((p) => p.id === hook.project_id);
  const env = envs.data?.find((e) => e.id === hook.environment_id);
  return `${project?.key ?? hook.project_id} / ${env?.key ?? hook.environment_id}`;
}

function CreateWebhookModal({
  onClose,
  onCreated,
}: {
  onClose: () => void;
  onCreated: (secret: string) => Promise<unknown>;
}) {
  const [events, setEvents] = useState<string[]>([]);
  const { level, proj, fields } = useScopeFields("org", "Scope", { org: "Organization", env: "Environment" });
  return (
    <FormModal
      title="New webhook"
      opened
      onClose={onClose}
      submitLabel="Create"
      onSubmit={async (form) => {
        const description = formText(form, "description");
        const created = unwrap(
          await api.POST("/v2/webhooks", {
            body: {
              url: formText(form, "url"),
              events,
              ...(description && { description }),
              ...(level === "env" &&
                proj && { project_id: proj, environment_id: formText(form, "environment") }),
            },
          }),
        );
        await onCreated(created.secret ?? "");
      }}
    >
      <TextInput
        label="URL"
        name="url"
        type="url"
        required
        placeholder="https://example.com/hooks"
        data-autofocus
      />
      <MultiSelect
        label="Events"
        description="types, a group of types (facts.*) or every event (*)"
        data={EVENT_CHOICES}
        value={events}
        onChange={setEvents}
        searchable
        withAsterisk
      />
      {fields}
      <Textarea label="Description" name="description" autosize />
    </FormModal>
  );
}
