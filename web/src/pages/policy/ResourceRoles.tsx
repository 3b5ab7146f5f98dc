import { Button, Group, MultiSelect, Select, Stack, Table, Text, TextInput } from "@mantine/core";
import { api, unwrap } from "../../api/client";
import { formText } from "../../components/dialogs";
import { RowActions } from "../../components/tables";
import { keyList, type ResourceRole } from "../../policy";
import { Section, useCardTools, type CardProps } from "./card-parts";

/**
 * A resource type's roles: their permissions, the roles they extend, and derivations (the role granted to users with
 * a role on a related instance).
 */
export function RolesSection(props: CardProps) {
  const { resource, all, canWrite, open } = props;
  const { r, add, remove } = useCardTools(props);
  const actions = Object.keys(resource.actions);
  const roles = Object.values(resource.roles);
  const relations = Object.entries(resource.relations);
  const roleForm = (role?: ResourceRole) =>
    open({
      kind: "form",
      title: role ? `Edit role ${resource.key}#${role.key}` : `New role of ${resource.key}`,
      submitLabel: role ? "Save" : "Create",
      fields: (
        <>
          {!role && <TextInput label="Key" name="key" required data-autofocus />}
          <TextInput label="Name" name="name" required defaultValue={role?.name ?? ""} />
          <MultiSelect
            label="Permissions"
            name="permissions"
            data={actions}
            defaultValue={role?.permissions ?? []}
            searchable
            clearable
          />
          <MultiSelect
            label="Extends"
            description="inherits the permissions of these roles of the same resource"
            name="extends"
            data={roles.map((x) => x.key).filter((k) => k !== role?.key)}
            defaultValue={role?.extends ?? []}
            searchable
            clearable
          />
        </>
      ),
      submit: async (form) => {
        const body = {
          name: formText(form, "name"),
          permissions: keyList(formText(form, "permissions")),
          extends: keyList(formText(form, "extends")),
        };
        unwrap(
          role
            ? await api.PATCH("/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/roles/{role_id}", {
                params: { path: { ...r, role_id: role.key } },
                body,
              })
            : await api.POST("/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/roles", {
                params: { path: r },
                body: { key: formText(form, "key"), ...body },
              }),
        );
      },
    });

  // A derivation names a relation of this resource and a role of the relation's subject resource.
  const derivationChoices = relations.flatMap(([relation, block]) =>
    Object.keys(all.find((x) => x.key === block.resource)?.roles ?? {}).map((subjectRole) => ({
      value: JSON.stringify([relation, block.resource, subjectRole]),
      label: `${block.resource}#${subjectRole} via ${relation}`,
    })),
  );
  const derivationForm = (role: ResourceRole) =>
    open({
      kind: "form",
      title: `Derive ${resource.key}#${role.key}`,
      submitLabel: "Add",
      fields: (
        <Select
          label="Users with this role on the related instance"
          name="derivation"
          data={derivationChoices}
          required
          description={
            derivationChoices.length === 0 ? "add a relation to a resource that has roles first" : undefined
          }
        />
      ),
      submit: async (form) => {
        const [relation, subject, subjectRole] = JSON.parse(formText(form, "derivation") || "[]") as string[];
        if (!relation || !subject || !subjectRole) throw new Error("choose the role the users hold");
        unwrap(
          await api.POST(
            "/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/roles/{role_id}/implicit_grants",
            {
              params: { path: { ...r, role_id: role.key } },
              body: { role: subjectRole, on_resource: subject, linked_by_relation: relation },
            },
          ),
        );
      },
    });

  return (
    <Section title="Roles" action={add("Add role", () => roleForm())}>
      {roles.length === 0 ? (
        <Text c="dimmed">No resource role yet.</Text>
      ) : (
        <Table aria-label={`Roles of ${resource.key}`}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Role</Table.Th>
              <Table.Th>Permissions</Table.Th>
              <Table.Th>Extends</Table.Th>
              <Table.Th>Granted to users with</Table.Th>
              {canWrite && <Table.Th>Actions</Table.Th>}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {roles.map((role) => (
              <Table.Tr key={role.key}>
                <Table.Td ff="monospace">{role.key}</Table.Td>
                <Table.Td>{role.permissions.join(", ")}</Table.Td>
                <Table.Td>{role.extends.join(", ")}</Table.Td>
                <Table.Td>
                  <Stack gap={2}>
                    {role.granted_to.users_with_role.map((d) => {
                      const label = `${d.on_resource}#${d.role} via ${d.linked_by_relation}`;
                      return (
                        <Group key={label} gap={4} wrap="nowrap">
                          <Text size="sm">{label}</Text>
                          {canWrite && (
                            <Button
                              size="compact-xs"
                              variant="subtle"
                              color="red"
                              aria-label={`Delete derivation ${label} of ${resource.key}#${role.key}`}
                              onClick={() =>
                                remove(
                                  "derivation",
                                  d.role,
                                  `Stops deriving ${resource.key}#${role.key} from ${label}.`,
                                  async () =>
                                    unwrap(
                                      await api.DELETE(
                                        "/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/roles/{role_id}/implicit_grants",
                                        {
                                          params: { path: { ...r, role_id: role.key } },
                                          body: {
                                            role: d.role,
                                            on_resource: d.on_resource,
                                            linked_by_relation: d.linked_by_relation,
                                          },
                                        },
                                      ),
                                    ),
                                )
                              }
                            >
                              ×
                            </Button>
                          )}
                        </Group>
                      );
                    })}
                  </Stack>
                </Table.Td>
                {canWrite && (
                  <Table.Td>
                    <RowActions
                      name={`role ${resource.key}#${role.key}`}
                      onEdit={() => roleForm(role)}
                      onDelete={() =>
                        remove(
                          "role",
                          role.key,
                          "Deletes the role with its assignments and derivations.",
                          async () =>
                            unwrap(
                              await api.DELETE(
                                "/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/roles/{role_id}",
                                { params: { path: { ...r, role_id: role.key } } },
                              ),
                            ),
                        )
                      }
                    >
                      <Button
                        size="compact-xs"
                        variant="subtle"
                        aria-label={`Derive ${resource.key}#${role.key}`}
                        onClick={() => derivationForm(role)}
                      >
                        Derive
                      </Button>
                    </RowActions>
                  </Table.Td>
                )}
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Section>
  );
}
