import { useState, type ReactNode } from "react";
import {
  Button,
  Group,
  MultiSelect,
  Paper,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Textarea,
  Title,
} from "@mantine/core";
import { api, unwrap } from "../../api/client";
import { FormModal, formText, TypedConfirmModal } from "../../components/dialogs";
import { Empty, QueryState } from "../../components/states";
import {
  keyList,
  useEnvPlace,
  useRefreshSchema,
  useResources,
  type Resource,
  type ResourceRole,
} from "../../policy";
import { PageHead, RowActions } from "./parts";

const ATTRIBUTE_TYPES = [
  "bool",
  "number",
  "string",
  "time",
  "array",
  "json",
  "object",
  "object_array",
] as const;
type AttributeType = (typeof ATTRIBUTE_TYPES)[number];

/** A form opened on the page: its title, fields and what submitting does. */
type Dialog =
  | {
      kind: "form";
      title: string;
      submitLabel: string;
      fields: ReactNode;
      submit: (form: FormData) => Promise<unknown>;
    }
  | { kind: "delete"; title: string; confirm: string; consequence: string; run: () => Promise<unknown> };

/**
 * An environment's resource types, each with its actions, attributes, resource roles (permissions, `extends`,
 * derivations) and relations to other resource types.
 */
export default function ResourcesPage() {
  const { path, canWrite } = useEnvPlace();
  const resources = useResources();
  const refresh = useRefreshSchema();
  const [dialog, setDialog] = useState<Dialog | null>(null);
  const writing = (fn: () => Promise<unknown>) => async () => {
    await fn();
    await refresh();
  };

  const newResource = () =>
    setDialog({
      kind: "form",
      title: "New resource",
      submitLabel: "Create",
      fields: (
        <>
          <TextInput label="Key" name="key" required data-autofocus />
          <TextInput label="Name" name="name" required />
          <Textarea label="Description" name="description" autosize />
          <TextInput label="Actions" name="actions" description="action keys, separated by commas" />
        </>
      ),
      submit: async (form) => {
        unwrap(
          await api.POST("/v2/schema/{proj_id}/{env_id}/resources", {
            params: { path },
            body: {
              key: formText(form, "key"),
              name: formText(form, "name"),
              description: formText(form, "description"),
              actions: Object.fromEntries(keyList(formText(form, "actions")).map((a) => [a, {}])),
            },
          }),
        );
      },
    });

  return (
    <Stack>
      <PageHead title="Resources" action={canWrite && <Button onClick={newResource}>New resource</Button>} />
      <QueryState query={resources}>
        {(list) =>
          list.length === 0 ? (
            <Empty>No resource type in this environment yet.</Empty>
          ) : (
            list.map((resource) => (
              <ResourceCard
                key={resource.id}
                resource={resource}
                all={list}
                canWrite={canWrite}
                open={setDialog}
              />
            ))
          )
        }
      </QueryState>

      {dialog?.kind === "form" && (
        <FormModal
          title={dialog.title}
          opened
          onClose={() => setDialog(null)}
          submitLabel={dialog.submitLabel}
          onSubmit={async (form) => {
            await dialog.submit(form);
            await refresh();
          }}
        >
          {dialog.fields}
        </FormModal>
      )}
      {dialog?.kind === "delete" && (
        <TypedConfirmModal
          title={dialog.title}
          opened
          onClose={() => setDialog(null)}
          confirmText={dialog.confirm}
          consequence={dialog.consequence}
          onConfirm={writing(dialog.run)}
        />
      )}
    </Stack>
  );
}

function Section({ title, action, children }: { title: string; action?: ReactNode; children: ReactNode }) {
  return (
    <Stack gap="xs">
      <Group justify="space-between">
        <Title order={3} size="h5">
          {title}
        </Title>
        {action}
      </Group>
      {children}
    </Stack>
  );
}

function ResourceCard({
  resource,
  all,
  canWrite,
  open,
}: {
  resource: Resource;
  all: Resource[];
  canWrite: boolean;
  open: (dialog: Dialog) => void;
}) {
  const { path } = useEnvPlace();
  const r = { ...path, resource_id: resource.key };
  const actions = Object.keys(resource.actions);
  const roles = Object.values(resource.roles);
  const relations = Object.entries(resource.relations);
  const attributes = Object.entries(resource.attributes);
  const add = (label: string, onClick: () => void) =>
    canWrite && (
      <Button size="compact-sm" variant="light" onClick={onClick} aria-label={`${label} to ${resource.key}`}>
        {label}
      </Button>
    );
  const remove = (what: string, key: string, consequence: string, run: () => Promise<unknown>) =>
    open({ kind: "delete", title: `Delete ${what} ${key}`, confirm: key, consequence, run });

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

  const attributeForm = (existing?: { key: string; type: string; description?: string }) =>
    open({
      kind: "form",
      title: existing ? `Edit attribute ${resource.key}.${existing.key}` : `New attribute of ${resource.key}`,
      submitLabel: existing ? "Save" : "Add",
      fields: (
        <>
          {!existing && <TextInput label="Key" name="key" required data-autofocus />}
          <Select
            label="Type"
            name="type"
            data={[...ATTRIBUTE_TYPES]}
            defaultValue={existing?.type ?? "string"}
            allowDeselect={false}
            required
          />
          <TextInput label="Description" name="description" defaultValue={existing?.description ?? ""} />
        </>
      ),
      submit: async (form) => {
        const body = {
          type: formText(form, "type") as AttributeType,
          description: formText(form, "description"),
        };
        unwrap(
          existing
            ? await api.PATCH(
                "/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/attributes/{attribute_id}",
                { params: { path: { ...r, attribute_id: existing.key } }, body },
              )
            : await api.POST("/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/attributes", {
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
    <Paper withBorder p="md" component="section" aria-label={`Resource ${resource.key}`}>
      <Stack>
        <Group justify="space-between">
          <div>
            <Title order={2} size="h4">
              <bdi>{resource.name}</bdi>{" "}
              <Text span ff="monospace" c="dimmed">
                {resource.key}
              </Text>
            </Title>
            {resource.description && <Text size="sm">{resource.description}</Text>}
          </div>
          {canWrite && (
            <RowActions
              name={`resource ${resource.key}`}
              onEdit={() =>
                open({
                  kind: "form",
                  title: `Edit resource ${resource.key}`,
                  submitLabel: "Save",
                  fields: (
                    <>
                      <TextInput
                        label="Name"
                        name="name"
                        required
                        defaultValue={resource.name}
                        data-autofocus
                      />
                      <Textarea
                        label="Description"
                        name="description"
                        autosize
                        defaultValue={resource.description ?? ""}
                      />
                    </>
                  ),
                  submit: async (form) =>
                    unwrap(
                      await api.PATCH("/v2/schema/{proj_id}/{env_id}/resources/{resource_id}", {
                        params: { path: r },
                        body: { name: formText(form, "name"), description: formText(form, "description") },
                      }),
                    ),
                })
              }
              onDelete={() =>
                remove(
                  "resource",
                  resource.key,
                  "Deletes the resource type with its roles, instances and rules.",
                  async () =>
                    unwrap(
                      await api.DELETE("/v2/schema/{proj_id}/{env_id}/resources/{resource_id}", {
                        params: { path: r },
                      }),
                    ),
                )
              }
            />
          )}
        </Group>

        <Section
          title="Actions"
          action={add("Add action", () =>
            open({
              kind: "form",
              title: `New action of ${resource.key}`,
              submitLabel: "Add",
              fields: (
                <>
                  <TextInput label="Key" name="key" required data-autofocus />
                  <TextInput label="Name" name="name" description="the key when left empty" />
                </>
              ),
              submit: async (form) =>
                unwrap(
                  await api.POST("/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/actions", {
                    params: { path: r },
                    body: {
                      key: formText(form, "key"),
                      name: formText(form, "name") || formText(form, "key"),
                    },
                  }),
                ),
            }),
          )}
        >
          <Group gap="xs">
            {actions.length === 0 && <Text c="dimmed">No action yet.</Text>}
            {actions.map((action) => (
              <Paper key={action} withBorder px="xs" radius="xl">
                <Group gap={2} wrap="nowrap">
                  <Text size="sm" ff="monospace">
                    {action}
                  </Text>
                  {canWrite && (
                    <Button
                      size="compact-xs"
                      variant="transparent"
                      color="red"
                      aria-label={`Delete action ${resource.key}:${action}`}
                      onClick={() =>
                        remove("action", action, "Removes the action from every role and rule.", async () =>
                          unwrap(
                            await api.DELETE(
                              "/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/actions/{action_id}",
                              { params: { path: { ...r, action_id: action } } },
                            ),
                          ),
                        )
                      }
                    >
                      ×
                    </Button>
                  )}
                </Group>
              </Paper>
            ))}
          </Group>
        </Section>

        <Section title="Attributes" action={add("Add attribute", () => attributeForm())}>
          {attributes.length === 0 ? (
            <Text c="dimmed">No attribute yet.</Text>
          ) : (
            <Table aria-label={`Attributes of ${resource.key}`}>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Key</Table.Th>
                  <Table.Th>Type</Table.Th>
                  <Table.Th>Description</Table.Th>
                  {canWrite && <Table.Th>Actions</Table.Th>}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {attributes.map(([key, attribute]) => (
                  <Table.Tr key={key}>
                    <Table.Td ff="monospace">{key}</Table.Td>
                    <Table.Td>{attribute.type}</Table.Td>
                    <Table.Td>{attribute.description ?? ""}</Table.Td>
                    {canWrite && (
                      <Table.Td>
                        <RowActions
                          name={`attribute ${resource.key}.${key}`}
                          onEdit={() => attributeForm({ ...attribute, key })}
                          onDelete={() =>
                            remove(
                              "attribute",
                              key,
                              "Removes the attribute from the resource type.",
                              async () =>
                                unwrap(
                                  await api.DELETE(
                                    "/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/attributes/{attribute_id}",
                                    { params: { path: { ...r, attribute_id: key } } },
                                  ),
                                ),
                            )
                          }
                        />
                      </Table.Td>
                    )}
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          )}
        </Section>

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

        <Section
          title="Relations"
          action={add("Add relation", () =>
            open({
              kind: "form",
              title: `New relation of ${resource.key}`,
              submitLabel: "Add",
              fields: (
                <>
                  <TextInput label="Key" name="key" required data-autofocus description="e.g. parent" />
                  <Select
                    label="Related resource"
                    name="subject"
                    data={all.map((x) => x.key)}
                    required
                    description={`an instance of ${resource.key} points to an instance of this resource`}
                  />
                </>
              ),
              submit: async (form) =>
                unwrap(
                  await api.POST("/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/relations", {
                    params: { path: r },
                    body: {
                      key: formText(form, "key"),
                      name: formText(form, "key"),
                      subject_resource: formText(form, "subject"),
                    },
                  }),
                ),
            }),
          )}
        >
          {relations.length === 0 ? (
            <Text c="dimmed">No relation yet.</Text>
          ) : (
            <Table aria-label={`Relations of ${resource.key}`}>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Relation</Table.Th>
                  <Table.Th>Related resource</Table.Th>
                  {canWrite && <Table.Th>Actions</Table.Th>}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {relations.map(([key, block]) => (
                  <Table.Tr key={key}>
                    <Table.Td ff="monospace">{key}</Table.Td>
                    <Table.Td>{block.resource}</Table.Td>
                    {canWrite && (
                      <Table.Td>
                        <RowActions
                          name={`relation ${resource.key}.${key}`}
                          onDelete={() =>
                            remove(
                              "relation",
                              key,
                              "Deletes the relation, its tuples and derivations using it.",
                              async () =>
                                unwrap(
                                  await api.DELETE(
                                    "/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/relations/{relation_id}",
                                    { params: { path: { ...r, relation_id: key } } },
                                  ),
                                ),
                            )
                          }
                        />
                      </Table.Td>
                    )}
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          )}
        </Section>
      </Stack>
    </Paper>
  );
}
