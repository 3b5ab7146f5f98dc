import { useState } from "react";
import { Button, MultiSelect, Stack, Table, Text, TextInput, Textarea } from "@mantine/core";
import { api, unwrap } from "../../api/client";
import { FormModal, formText, TypedConfirmModal } from "../../components/dialogs";
import { Empty, QueryState } from "../../components/states";
import { keyList, useEnvPlace, useRefreshSchema, useTenantRoles, type TenantRole } from "../../policy";
import { PageHead, RowActions } from "../../components/tables";
import { named } from "../../components/user-text";
import { NameKeyFields } from "../../components/key-fields";

/** An environment's tenant roles: create, edit (name, description, the roles it extends), delete. */
export default function RolesPage() {
  const { path, canWrite } = useEnvPlace();
  const roles = useTenantRoles();
  const refresh = useRefreshSchema();
  const [dialog, setDialog] = useState<
    { kind: "new" } | { kind: "edit" | "delete"; role: TenantRole } | null
  >(null);
  const fields = (form: FormData) => ({
    name: formText(form, "name"),
    description: formText(form, "description"),
    extends: keyList(formText(form, "extends")),
  });
  const others = (key?: string) => (roles.data ?? []).map((r) => r.key).filter((k) => k !== key);

  return (
    <Stack>
      <PageHead
        title="Tenant roles"
        action={canWrite && <Button onClick={() => setDialog({ kind: "new" })}>New role</Button>}
      />
      <QueryState query={roles}>
        {(list) =>
          list.length === 0 ? (
            <Empty>No tenant role in this environment yet.</Empty>
          ) : (
            <Table striped aria-label="Tenant roles">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Key</Table.Th>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Extends</Table.Th>
                  <Table.Th>Permissions</Table.Th>
                  {canWrite && <Table.Th>Actions</Table.Th>}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {list.map((role) => (
                  <Table.Tr key={role.id}>
                    <Table.Td>
                      <Text ff="monospace" size="sm">
                        {role.key}
                      </Text>
                    </Table.Td>
                    <Table.Td>{role.name}</Table.Td>
                    <Table.Td>{role.extends.join(", ")}</Table.Td>
                    <Table.Td>{role.permissions.length}</Table.Td>
                    {canWrite && (
                      <Table.Td>
                        <RowActions
                          name={role.key}
                          onEdit={() => setDialog({ kind: "edit", role })}
                          onDelete={() => setDialog({ kind: "delete", role })}
                        />
                      </Table.Td>
                    )}
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          )
        }
      </QueryState>

      <FormModal
        title="New tenant role"
        opened={dialog?.kind === "new"}
        onClose={() => setDialog(null)}
        submitLabel="Create"
        onSubmit={async (form) => {
          unwrap(
            await api.POST("/v2/schema/{proj_id}/{env_id}/roles", {
              params: { path },
              body: { key: formText(form, "key"), ...fields(form) },
            }),
          );
          await refresh();
        }}
      >
        <RoleFields others={others()} creating />
      </FormModal>

      {dialog?.kind === "edit" && (
        <FormModal
          title={named`Edit role ${dialog.role.key}`}
          opened
          onClose={() => setDialog(null)}
          submitLabel="Save"
          onSubmit={async (form) => {
            unwrap(
              await api.PATCH("/v2/schema/{proj_id}/{env_id}/roles/{role_id}", {
                params: { path: { ...path, role_id: dialog.role.key } },
                body: fields(form),
              }),
            );
            await refresh();
          }}
        >
          <RoleFields role={dialog.role} others={others(dialog.role.key)} />
        </FormModal>
      )}

      {dialog?.kind === "delete" && (
        <TypedConfirmModal
          title={named`Delete role ${dialog.role.key}`}
          opened
          onClose={() => setDialog(null)}
          confirmText={dialog.role.key}
          consequence="Deletes the role, its permissions and every assignment of it."
          onConfirm={async () => {
            unwrap(
              await api.DELETE("/v2/schema/{proj_id}/{env_id}/roles/{role_id}", {
                params: { path: { ...path, role_id: dialog.role.key } },
              }),
            );
            await refresh();
          }}
        />
      )}
    </Stack>
  );
}

/** Name, description and the roles a role extends (inherits the permissions of), in the create and edit forms. */
export function RoleFields({
  role,
  others,
  creating,
}: {
  role?: { name: string; description?: string; extends: string[] };
  others: string[];
  /** A new role: its name proposes its key. */
  creating?: boolean;
}) {
  return (
    <>
      {creating ? (
        <NameKeyFields />
      ) : (
        <TextInput label="Name" name="name" required defaultValue={role?.name ?? ""} />
      )}
      <Textarea label="Description" name="description" autosize defaultValue={role?.description ?? ""} />
      <MultiSelect
        label="Extends"
        description="inherits the permissions of these roles"
        name="extends"
        data={others}
        defaultValue={role?.extends ?? []}
        searchable
        clearable
      />
    </>
  );
}
