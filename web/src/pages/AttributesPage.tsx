import { useState } from "react";
import { Button, Card, Group, Select, Stack, Text, TextInput, Title } from "@mantine/core";
import { api, unwrap } from "../api/client";
import { FormModal, formText, TypedConfirmModal } from "../components/dialogs";
import { QueryState } from "../components/states";
import { DataTable, PageHead, RowActions } from "../components/tables";
import { named } from "../components/user-text";
import { useAttributes, useEnvPlace, useRefreshSchema } from "../policy";
import type { AttributeType } from "./policy/attribute-types";

const TYPES: AttributeType[] = [
  "string",
  "number",
  "bool",
  "time",
  "array",
  "json",
  "object",
  "object_array",
];
const KINDS = [
  { resource: "__user", noun: "user", title: "User attributes" },
  { resource: "__tenant", noun: "tenant", title: "Tenant attributes" },
] as const;
type Kind = (typeof KINDS)[number];

/** The declared attributes of one kind: a table, with New and Delete for members who may write. */
function AttributeSection({
  kind,
  onNew,
  onDelete,
}: {
  kind: Kind;
  onNew: () => void;
  onDelete: (key: string) => void;
}) {
  const { canWrite } = useEnvPlace();
  const attributes = useAttributes(kind.resource);
  return (
    <Card withBorder component="section" aria-label={kind.title}>
      <Stack>
        <Group justify="space-between">
          <Title order={2} size="h3">
            {kind.title}
          </Title>
          {canWrite && (
            <Button variant="light" onClick={onNew}>
              New {kind.noun} attribute
            </Button>
          )}
        </Group>
        <QueryState query={attributes}>
          {(list) => (
            <DataTable
              label={kind.title}
              columns={["Key", "Type", "Description", canWrite && "Actions"]}
              rows={list}
              rowKey={(a) => a.id}
              emptyRow={`No ${kind.noun} attribute is declared yet.`}
              cells={(a) => [
                <Text ff="monospace" size="sm">
                  {a.key}
                </Text>,
                a.type,
                a.description ?? "",
                <RowActions name={`${kind.noun} attribute ${a.key}`} onDelete={() => onDelete(a.key)} />,
              ]}
            />
          )}
        </QueryState>
      </Stack>
    </Card>
  );
}

/** The user and tenant attribute schemas: the types the ABAC builder offers and checks conditions against. */
export default function AttributesPage() {
  const { path } = useEnvPlace();
  const refresh = useRefreshSchema();
  const [dialog, setDialog] = useState<{ kind: Kind; delete?: string } | null>(null);
  const resource_id = dialog?.kind.resource ?? "";
  return (
    <Stack>
      <PageHead title="Attributes" />
      <Text size="sm">
        Declared attributes are what conditions read as <code>user.&lt;key&gt;</code> (user sets) and what
        tenants carry; the ABAC builder offers them and refuses comparisons their type cannot satisfy. A
        resource&apos;s own attributes are on the Resources page.
      </Text>
      {KINDS.map((kind) => (
        <AttributeSection
          key={kind.resource}
          kind={kind}
          onNew={() => setDialog({ kind })}
          onDelete={(key) => setDialog({ kind, delete: key })}
        />
      ))}
      <FormModal
        title={`New ${dialog?.kind.noun ?? ""} attribute`}
        opened={dialog !== null && dialog.delete === undefined}
        onClose={() => setDialog(null)}
        submitLabel="Create"
        onSubmit={async (form) => {
          const description = formText(form, "description");
          unwrap(
            await api.POST("/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/attributes", {
              params: { path: { ...path, resource_id } },
              body: {
                key: formText(form, "key"),
                type: formText(form, "type") as AttributeType,
                ...(description && { description }),
              },
            }),
          );
          await refresh();
        }}
      >
        <TextInput label="Key" name="key" required description="letters, digits, - and _" data-autofocus />
        <Select label="Type" name="type" required allowDeselect={false} defaultValue="string" data={TYPES} />
        <TextInput label="Description" name="description" />
      </FormModal>
      {dialog?.delete !== undefined && (
        <TypedConfirmModal
          title={named`Delete ${dialog.kind.noun} attribute ${dialog.delete}`}
          opened
          onClose={() => setDialog(null)}
          confirmText={dialog.delete}
          consequence="Removes the declaration; conditions that read the attribute are not changed."
          onConfirm={async () => {
            unwrap(
              await api.DELETE(
                "/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/attributes/{attribute_id}",
                {
                  params: { path: { ...path, resource_id, attribute_id: dialog.delete ?? "" } },
                },
              ),
            );
            await refresh();
          }}
        />
      )}
    </Stack>
  );
}
