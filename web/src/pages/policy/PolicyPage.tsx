import { useState } from "react";
import { Button, Checkbox, Group, Paper, ScrollArea, Stack, Table, Text, Title } from "@mantine/core";
import { api, unwrap } from "../../api/client";
import { Empty, ErrorState, Loading } from "../../components/states";
import { UnsavedChangesGuard } from "../../components/unsaved";
import { notifyDone } from "../../notify";
import { useEnvPlace, useRefreshSchema, useResources, useTenantRoles, type Resource } from "../../policy";
import { PageHead } from "../../components/tables";

/** A column of the matrix: a tenant role, or a resource role of the table's resource. */
interface Column {
  id: string;
  label: string;
  role: string;
  /** The resource of a resource role. */
  resource?: string;
  /** The permissions it holds: "resource:action" for a tenant role, action keys for a resource role. */
  held: Set<string>;
}

const cellId = (column: Column, resource: string, action: string) => `${column.id} ${resource}:${action}`;
const permission = (column: Column, resource: string, action: string) =>
  column.resource ? action : `${resource}:${action}`;

/** Orders action keys as people read them: a2 before a10. */
const byNumbersInText = new Intl.Collator("en", { numeric: true });

// The cells are native checkboxes: a matrix of 10 roles x 50 actions is 500 of them, re-rendered on each tick.
const CELL = {
  width: "1.1rem",
  height: "1.1rem",
  margin: 0,
  accentColor: "var(--mantine-primary-color-filled)",
};

/**
 * The policy editor: per resource, a matrix of roles × actions with a checkbox per permission. Ticking only
 * changes the view; Save sends every changed cell in one call (`POST .../bulk/role_permissions`, all or
 * nothing), and a refused save keeps the edits on screen with the API's error.
 */
export default function PolicyPage() {
  const { path, canWrite } = useEnvPlace();
  const resources = useResources();
  const roles = useTenantRoles();
  const refresh = useRefreshSchema();
  const [edits, setEdits] = useState<Map<string, boolean>>(new Map());
  const [error, setError] = useState<unknown>(null);
  const [saving, setSaving] = useState(false);

  const failed = resources.error ?? roles.error;
  if (failed) return <ErrorState error={failed} />;
  if (!resources.data || !roles.data) return <Loading />;
  const tenantColumns: Column[] = roles.data.map((role) => ({
    id: `role:${role.key}`,
    label: role.key,
    role: role.key,
    held: new Set(role.permissions),
  }));
  const columnsOf = (resource: Resource): Column[] => [
    ...tenantColumns,
    ...Object.values(resource.roles).map((role) => ({
      id: `${resource.key}#${role.key}`,
      label: `${resource.key}#${role.key}`,
      role: role.key,
      resource: resource.key,
      held: new Set(role.permissions),
    })),
  ];
  const isHeld = (column: Column, resource: string, action: string) =>
    column.held.has(permission(column, resource, action));
  const value = (column: Column, resource: string, action: string) =>
    edits.get(cellId(column, resource, action)) ?? isHeld(column, resource, action);
  const set = (cells: { column: Column; resource: string; action: string }[], next: boolean) =>
    setEdits((previous) => {
      const map = new Map(previous);
      for (const { column, resource, action } of cells) {
        const id = cellId(column, resource, action);
        if (next === isHeld(column, resource, action)) map.delete(id);
        else map.set(id, next);
      }
      return map;
    });

  const save = async () => {
    const operations = new Map<
      string,
      { role: string; resource?: string; grant: string[]; revoke: string[] }
    >();
    for (const resource of resources.data) {
      for (const column of columnsOf(resource)) {
        for (const action of Object.keys(resource.actions)) {
          const next = edits.get(cellId(column, resource.key, action));
          if (next === undefined) continue;
          const op = operations.get(column.id) ?? {
            role: column.role,
            ...(column.resource && { resource: column.resource }),
            grant: [],
            revoke: [],
          };
          (next ? op.grant : op.revoke).push(permission(column, resource.key, action));
          operations.set(column.id, op);
        }
      }
    }
    setSaving(true);
    setError(null);
    try {
      unwrap(
        await api.POST("/v2/schema/{proj_id}/{env_id}/bulk/role_permissions", {
          params: { path },
          body: { operations: [...operations.values()] },
        }),
      );
      await refresh();
      setEdits(new Map());
      notifyDone(`Saved the permissions of ${operations.size} roles`);
    } catch (e) {
      setError(e);
    } finally {
      setSaving(false);
    }
  };

  return (
    <Stack>
      <UnsavedChangesGuard dirty={edits.size > 0} />
      <PageHead
        title="Policy editor"
        action={
          canWrite && (
            <Group>
              <Button
                variant="default"
                disabled={edits.size === 0 || saving}
                onClick={() => setEdits(new Map())}
              >
                Discard changes
              </Button>
              <Button disabled={edits.size === 0} loading={saving} onClick={() => void save()}>
                Save {edits.size > 0 ? `${edits.size} change${edits.size > 1 ? "s" : ""}` : ""}
              </Button>
            </Group>
          )
        }
      />
      <Text size="sm" c="dimmed">
        Tenant roles grant on every resource of a tenant; resource roles (resource#role) on the instances they
        are assigned on. Changes are kept here until saved, all at once.
      </Text>
      {error !== null && <ErrorState error={error} />}
      {resources.data.length === 0 && (
        <Empty>No resource type yet: add resources and their actions first.</Empty>
      )}
      {resources.data.map((resource) => {
        const actions = Object.keys(resource.actions).sort(byNumbersInText.compare);
        const columns = columnsOf(resource);
        const column = (c: Column) =>
          actions.map((action) => ({ column: c, resource: resource.key, action }));
        const row = (action: string) => columns.map((c) => ({ column: c, resource: resource.key, action }));
        const allOf = (cells: { column: Column; resource: string; action: string }[]) => {
          const on = cells.filter((cell) => value(cell.column, cell.resource, cell.action)).length;
          return {
            checked: cells.length > 0 && on === cells.length,
            indeterminate: on > 0 && on < cells.length,
          };
        };
        return (
          <Paper
            key={resource.id}
            withBorder
            p="md"
            component="section"
            aria-label={`Policy of ${resource.key}`}
          >
            <Title order={2} size="h4" mb="sm">
              <bdi>{resource.name}</bdi>
            </Title>
            {actions.length === 0 || columns.length === 0 ? (
              <Text c="dimmed">{actions.length === 0 ? "No action yet." : "No role yet."}</Text>
            ) : (
              <ScrollArea type="auto" offsetScrollbars>
                <Table withColumnBorders aria-label={`Permissions on ${resource.key}`}>
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Action</Table.Th>
                      {columns.map((c) => {
                        const state = allOf(column(c));
                        return (
                          <Table.Th key={c.id}>
                            <Group gap={6} wrap="nowrap">
                              {canWrite && (
                                <Checkbox
                                  size="xs"
                                  aria-label={`All ${resource.key} actions for ${c.label}`}
                                  {...state}
                                  onChange={() => set(column(c), !state.checked)}
                                />
                              )}
                              <Text size="sm" fw={600} ff="monospace">
                                {c.label}
                              </Text>
                            </Group>
                          </Table.Th>
                        );
                      })}
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {actions.map((action) => {
                      const state = allOf(row(action));
                      return (
                        <Table.Tr key={action}>
                          <Table.Th scope="row">
                            <Group gap={6} wrap="nowrap">
                              {canWrite && (
                                <Checkbox
                                  size="xs"
                                  aria-label={`All roles for ${resource.key}:${action}`}
                                  {...state}
                                  onChange={() => set(row(action), !state.checked)}
                                />
                              )}
                              <Text size="sm" ff="monospace">
                                {action}
                              </Text>
                            </Group>
                          </Table.Th>
                          {columns.map((c) => {
                            const changed = edits.has(cellId(c, resource.key, action));
                            return (
                              <Table.Td
                                key={c.id}
                                bg={changed ? "var(--mantine-color-yellow-light)" : undefined}
                              >
                                <input
                                  type="checkbox"
                                  style={CELL}
                                  aria-label={`${c.label} may ${action} ${resource.key}`}
                                  checked={value(c, resource.key, action)}
                                  disabled={!canWrite}
                                  onChange={(e) =>
                                    set(
                                      [{ column: c, resource: resource.key, action }],
                                      e.currentTarget.checked,
                                    )
                                  }
                                />
                              </Table.Td>
                            );
                          })}
                        </Table.Tr>
                      );
                    })}
                  </Table.Tbody>
                </Table>
              </ScrollArea>
            )}
          </Paper>
        );
      })}
    </Stack>
  );
}
