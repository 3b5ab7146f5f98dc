import { useState, type ReactNode } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Button, Group, Modal, Select, Stack, Text, TextInput } from "@mantine/core";
import { useScopeFields } from "../components/scope-fields";
import { api, unwrap } from "../api/client";
import { CopyBlock } from "../components/CopyBlock";
import { FormModal, formText } from "../components/dialogs";
import { Empty, ErrorState, QueryState } from "../components/states";
import { useOrg } from "../org";
import { notifyError } from "../notify";
import { named } from "../components/user-text";
import { DataTable, PageHead, RowButton } from "../components/tables";

type Key = { id: string; name?: string };
type Access = "admin" | "write" | "read" | "no_access";

const when = (at: string | null | undefined) => (at ? new Date(at).toLocaleString() : "never");

/** The organization's API keys: list, create (organization, project or environment), reveal, rotate, revoke. */
export default function ApiKeysPage() {
  const org = useOrg();
  const queryClient = useQueryClient();
  const [creating, setCreating] = useState(false);
  const [shown, setShown] = useState<{ id: string; title: ReactNode } | null>(null);
  const [revoking, setRevoking] = useState<Key | null>(null);
  const keys = useQuery({
    queryKey: [org.id, "api-keys"],
    queryFn: async () => unwrap(await api.GET("/v2/api-key", { params: { query: { per_page: 100 } } })),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: [org.id, "api-keys"] });
  const rotate = async (key: Key) => {
    try {
      unwrap(
        await api.POST("/v2/api-key/{api_key_id}/rotate-secret", {
          params: { path: { api_key_id: key.id } },
        }),
      );
      await refresh();
      setShown({ id: key.id, title: named`New secret of ${key.name ?? key.id}` });
    } catch (e) {
      notifyError(e);
    }
  };

  return (
    <Stack>
      <PageHead title="API keys" action={<Button onClick={() => setCreating(true)}>New API key</Button>} />
      <QueryState query={keys}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty>No API key yet.</Empty>
          ) : (
            <DataTable
              columns={["Name", "Scope", "Access", "Created by", "Last used", "Actions"]}
              rows={page.data}
              rowKey={(key) => key.id}
              cells={(key) => {
                const name = key.name ?? key.id;
                return [
                  key.name ?? "",
                  key.object_type === "org"
                    ? "organization"
                    : [key.project?.key, key.env?.key].filter(Boolean).join(" / "),
                  key.access_level,
                  key.created_by_member?.email ??
                    (key.created_by_key ? `key ${key.created_by_key.name ?? key.created_by_key.id}` : "—"),
                  when(key.last_used_at),
                  <Group gap="xs" wrap="nowrap">
                    <RowButton
                      label={`Reveal ${name}`}
                      onClick={() => setShown({ id: key.id, title: named`Secret of ${name}` })}
                    >
                      Reveal
                    </RowButton>
                    <RowButton label={`Rotate ${name}`} onClick={() => void rotate(key)}>
                      Rotate
                    </RowButton>
                    <RowButton label={`Revoke ${name}`} danger onClick={() => setRevoking(key)}>
                      Revoke
                    </RowButton>
                  </Group>,
                ];
              }}
            />
          )
        }
      </QueryState>
      {creating && (
        <CreateKeyModal
          onClose={() => setCreating(false)}
          onCreated={async (id, name) => {
            await refresh();
            setShown({ id, title: named`Secret of ${name}` });
          }}
        />
      )}
      {shown && <SecretModal keyId={shown.id} title={shown.title} onClose={() => setShown(null)} />}
      {revoking && (
        <FormModal
          title={named`Revoke ${revoking.name ?? revoking.id}`}
          opened
          onClose={() => setRevoking(null)}
          submitLabel="Revoke"
          danger
          onSubmit={async () => {
            unwrap(
              await api.DELETE("/v2/api-key/{api_key_id}", { params: { path: { api_key_id: revoking.id } } }),
            );
            await refresh();
          }}
        >
          <Text size="sm">Calls with this key will be refused at once. This cannot be undone.</Text>
        </FormModal>
      )}
    </Stack>
  );
}

function CreateKeyModal({
  onClose,
  onCreated,
}: {
  onClose: () => void;
  onCreated: (id: string, name: string) => Promise<unknown>;
}) {
  const {
    level,
    proj,
    fields: scopeFields,
  } = useScopeFields("env", "Scope", { org: "Organization", project: "Project", env: "Environment" });
  return (
    <FormModal
      title="New API key"
      opened
      onClose={onClose}
      submitLabel="Create"
      onSubmit={async (form) => {
        const name = formText(form, "name");
        const access = formText(form, "access_level") as Access;
        const created = unwrap(
          await api.POST("/v2/api-key", {
            body: {
              name,
              object_type: level,
              access_level: access,
              ...(level !== "org" && proj && { project_id: proj }),
              ...(level === "env" && { environment_id: formText(form, "environment") }),
            },
          }),
        );
        await onCreated(created.id, name);
      }}
    >
      <TextInput label="Name" name="name" required data-autofocus />
      {scopeFields}
      <Select
        label="Access"
        name="access_level"
        defaultValue="write"
        allowDeselect={false}
        data={["admin", "write", "read", "no_access"]}
      />
    </FormModal>
  );
}

/** The key's secret, fetched when asked for, with a copy button. */
function SecretModal({ keyId, title, onClose }: { keyId: string; title: ReactNode; onClose: () => void }) {
  const secret = useQuery({
    queryKey: ["api-key-secret", keyId],
    gcTime: 0,
    queryFn: async () =>
      unwrap(await api.GET("/v2/api-key/{api_key_id}", { params: { path: { api_key_id: keyId } } })),
  });
  return (
    <Modal opened onClose={onClose} title={title} centered size="lg">
      <Stack>
        {secret.error ? (
          <ErrorState error={secret.error} />
        ) : (
          <CopyBlock
            label="Secret"
            value={secret.data?.secret}
            copyLabel="Copy the secret"
            onClose={onClose}
          />
        )}
      </Stack>
    </Modal>
  );
}
