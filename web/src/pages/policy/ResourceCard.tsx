import { Button, Group, Paper, Select, Stack, Table, Text, TextInput, Textarea, Title } from "@mantine/core";
import { api, unwrap } from "../../api/client";
import { formText } from "../../components/dialogs";
import { RowActions } from "../../components/tables";
import { Section, useCardTools, type CardProps } from "./card-parts";
import { RolesSection } from "./ResourceRoles";

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

/** A resource type's card: its name and description, then its actions, attributes, roles and relations. */
export function ResourceCard(props: CardProps) {
  const { resource, canWrite, open } = props;
  const { r, remove } = useCardTools(props);
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

        <ActionsSection {...props} />
        <AttributesSection {...props} />
        <RolesSection {...props} />
        <RelationsSection {...props} />
      </Stack>
    </Paper>
  );
}

function ActionsSection(props: CardProps) {
  const { resource, canWrite, open } = props;
  const { r, add, remove } = useCardTools(props);
  const actions = Object.keys(resource.actions);
  return (
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
  );
}

function AttributesSection(props: CardProps) {
  const { resource, canWrite, open } = props;
  const { r, add, remove } = useCardTools(props);
  const attributes = Object.entries(resource.attributes);
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

  return (
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
                        remove("attribute", key, "Removes the attribute from the resource type.", async () =>
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
  );
}

function RelationsSection(props: CardProps) {
  const { resource, all, canWrite, open } = props;
  const { r, add, remove } = useCardTools(props);
  const relations = Object.entries(resource.relations);
  return (
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
  );
}
