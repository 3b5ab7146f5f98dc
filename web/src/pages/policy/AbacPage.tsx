import { useState } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import {
  Button,
  Checkbox,
  Group,
  Modal,
  Paper,
  ScrollArea,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from "@mantine/core";
import { api, unwrap } from "../../api/client";
import { TypedConfirmModal } from "../../components/dialogs";
import { Empty, ErrorState, QueryState } from "../../components/states";
import { UnsavedChangesGuard } from "../../components/unsaved";
import { notifyError } from "../../notify";
import {
  useAttributes,
  useConditionSets,
  useEnvPlace,
  useRefreshSchema,
  useResources,
  type ConditionSet,
  type Resource,
} from "../../policy";
import {
  ConditionBuilder,
  emptyGroup,
  newLeaf,
  toConditions,
  toTree,
  treeProblems,
  type Group as Tree,
} from "./ConditionBuilder";
import { PageHead, RowActions } from "../../components/tables";
import { named, jsonText } from "../../components/user-text";

type SetType = "userset" | "resourceset";

/** Attribute-based access: user sets and resource sets defined by conditions, and the rules between them. */
export default function AbacPage() {
  const { canWrite } = useEnvPlace();
  const sets = useConditionSets();
  const resources = useResources();
  const refresh = useRefreshSchema();
  const [dialog, setDialog] = useState<
    { kind: "new"; type: SetType } | { kind: "edit" | "delete"; set: ConditionSet } | null
  >(null);
  const { path } = useEnvPlace();

  return (
    <Stack>
      <PageHead title="ABAC" />
      <QueryState query={sets}>
        {(list) => (
          <>
            {(["userset", "resourceset"] as const).map((type) => (
              <Paper
                key={type}
                withBorder
                p="md"
                component="section"
                aria-label={type === "userset" ? "User sets" : "Resource sets"}
              >
                <Group justify="space-between" mb="sm">
                  <Title order={2} size="h4">
                    {type === "userset" ? "User sets" : "Resource sets"}
                  </Title>
                  {canWrite && (
                    <Button onClick={() => setDialog({ kind: "new", type })}>
                      {type === "userset" ? "New user set" : "New resource set"}
                    </Button>
                  )}
                </Group>
                <SetTable
                  sets={list.filter((s) => s.type === type)}
                  canWrite={canWrite}
                  onEdit={(set) => setDialog({ kind: "edit", set })}
                  onDelete={(set) => setDialog({ kind: "delete", set })}
                />
              </Paper>
            ))}
            <Paper withBorder p="md" component="section" aria-label="Set rules">
              <Title order={2} size="h4" mb="sm">
                Set rules
              </Title>
              <SetRules sets={list} resources={resources.data ?? []} canWrite={canWrite} />
            </Paper>
          </>
        )}
      </QueryState>

      {(dialog?.kind === "new" || dialog?.kind === "edit") && (
        <ConditionSetModal
          type={dialog.kind === "new" ? dialog.type : (dialog.set.type as SetType)}
          set={dialog.kind === "edit" ? dialog.set : undefined}
          resources={resources.data ?? []}
          onClose={() => setDialog(null)}
        />
      )}
      {dialog?.kind === "delete" && (
        <TypedConfirmModal
          title={named`Delete ${dialog.set.key}`}
          opened
          onClose={() => setDialog(null)}
          confirmText={dialog.set.key}
          consequence="Deletes the set, its child sets and every set rule naming them."
          onConfirm={async () => {
            unwrap(
              await api.DELETE("/v2/schema/{proj_id}/{env_id}/condition_sets/{condition_set_id}", {
                params: { path: { ...path, condition_set_id: dialog.set.key } },
              }),
            );
            await refresh();
          }}
        />
      )}
    </Stack>
  );
}

function SetTable({
  sets,
  canWrite,
  onEdit,
  onDelete,
}: {
  sets: ConditionSet[];
  canWrite: boolean;
  onEdit: (set: ConditionSet) => void;
  onDelete: (set: ConditionSet) => void;
}) {
  if (sets.length === 0) return <Empty>None yet.</Empty>;
  return (
    <Table>
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Key</Table.Th>
          <Table.Th>Name</Table.Th>
          <Table.Th>Resource</Table.Th>
          <Table.Th>Conditions</Table.Th>
          <Table.Th>Actions</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {sets.map((set) => (
          <Table.Tr key={set.id}>
            <Table.Td ff="monospace">{set.key}</Table.Td>
            <Table.Td>{set.name}</Table.Td>
            <Table.Td>{set.resource?.key ?? ""}</Table.Td>
            <Table.Td>
              <Text size="xs" ff="monospace">
                {jsonText(set.conditions ?? {})}
              </Text>
            </Table.Td>
            <Table.Td>
              {canWrite ? (
                <RowActions name={set.key} onEdit={() => onEdit(set)} onDelete={() => onDelete(set)} />
              ) : (
                <Button
                  size="compact-xs"
                  variant="subtle"
                  aria-label={`Show ${set.key}`}
                  onClick={() => onEdit(set)}
                >
                  Show
                </Button>
              )}
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

/** Creates or edits a user set or resource set; the conditions are built visually and validated as typed. */
function ConditionSetModal({
  type,
  set,
  resources,
  onClose,
}: {
  type: SetType;
  set?: ConditionSet;
  resources: Resource[];
  onClose: () => void;
}) {
  const { path, canWrite } = useEnvPlace();
  const refresh = useRefreshSchema();
  const prefix = type === "userset" ? "user" : "resource";
  const [key, setKey] = useState(set?.key ?? "");
  const [name, setName] = useState(set?.name ?? "");
  const [resource, setResource] = useState<string | null>(set?.resource?.key ?? null);
  const [opened] = useState<Tree>(() =>
    set ? toTree(set.conditions ?? {}) : { ...emptyGroup(), children: [newLeaf()] },
  );
  const [tree, setTree] = useState<Tree>(opened);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const userAttributes = useAttributes("__user");
  const resourceAttributes = useAttributes(type === "resourceset" ? resource : null);
  const declared = [
    ...(userAttributes.data ?? []).map((a) => ({ ...a, path: `user.${a.key}` })),
    ...(type === "resourceset" ? (resourceAttributes.data ?? []) : []).map((a) => ({
      ...a,
      path: `resource.${a.key}`,
    })),
  ];
  const problems = treeProblems(tree, declared);
  const missing = key.trim() === "" || name.trim() === "" || (type === "resourceset" && !resource);
  const conditions = toConditions(tree);
  // Every edit makes a new tree; a save closes the modal, and with it the guard.
  const dirty =
    tree !== opened ||
    key !== (set?.key ?? "") ||
    name !== (set?.name ?? "") ||
    resource !== (set?.resource?.key ?? null);

  const save = async () => {
    setBusy(true);
    setError(null);
    try {
      unwrap(
        set
          ? await api.PATCH("/v2/schema/{proj_id}/{env_id}/condition_sets/{condition_set_id}", {
              params: { path: { ...path, condition_set_id: set.key } },
              body: { name, conditions },
            })
          : await api.POST("/v2/schema/{proj_id}/{env_id}/condition_sets", {
              params: { path },
              body: { key, name, type, conditions, ...(resource && { resource_id: resource }) },
            }),
      );
      await refresh();
      onClose();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  const what = type === "userset" ? "user set" : "resource set";
  return (
    <Modal
      opened
      onClose={onClose}
      title={set ? `${canWrite ? "Edit" : "The"} ${what} ${set.key}` : `New ${what}`}
      size="xl"
      centered
    >
      <Stack>
        <UnsavedChangesGuard dirty={canWrite && dirty} />
        {error !== null && <ErrorState error={error} />}
        <Group grow>
          <TextInput
            label="Key"
            required
            disabled={set !== undefined}
            value={key}
            onChange={(e) => setKey(e.currentTarget.value)}
            data-autofocus
          />
          <TextInput
            label="Name"
            required
            readOnly={!canWrite}
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
          />
          {type === "resourceset" && (
            <Select
              label="Resource"
              required
              disabled={set !== undefined}
              data={resources.map((r) => r.key)}
              value={resource}
              onChange={setResource}
            />
          )}
        </Group>
        <Text size="sm" fw={500}>
          Conditions
        </Text>
        <ConditionBuilder
          value={tree}
          onChange={setTree}
          prefix={prefix}
          declared={declared}
          readOnly={!canWrite}
        />
        <Text size="sm" c="dimmed">
          As stored:
        </Text>
        <Text
          component="pre"
          size="xs"
          ff="monospace"
          bg="var(--mantine-color-default-hover)"
          p="xs"
          aria-label="Conditions as JSON"
        >
          {jsonText(conditions, 2)}
        </Text>
        <Group justify="flex-end">
          <Text size="sm" c={problems > 0 ? "red.8" : "dimmed"}>
            {problems > 0 ? `${problems} problem${problems > 1 ? "s" : ""} to fix before saving` : "Valid"}
          </Text>
          <Button variant="default" onClick={onClose}>
            {canWrite ? "Cancel" : "Close"}
          </Button>
          {canWrite && (
            <Button disabled={problems > 0 || missing} loading={busy} onClick={() => void save()}>
              Save
            </Button>
          )}
        </Group>
      </Stack>
    </Modal>
  );
}

/**
 * The set rules as matrices: per resource set, its user sets × the actions of its resource. A checkbox grants or
 * revokes at once (one rule per call, as the API has it).
 */
function SetRules({
  sets,
  resources,
  canWrite,
}: {
  sets: ConditionSet[];
  resources: Resource[];
  canWrite: boolean;
}) {
  const { path, key } = useEnvPlace();
  const queryClient = useQueryClient();
  const rules = useQuery({
    queryKey: [...key, "set_rules"],
    queryFn: async () => {
      const all = [];
      for (let page = 1; ; page++) {
        const items = unwrap(
          await api.GET("/v2/facts/{proj_id}/{env_id}/set_rules", {
            params: { path, query: { page, per_page: 100 } },
          }),
        );
        all.push(...items);
        if (items.length < 100) return all;
      }
    },
  });
  // The rule being written shows as asked until the server's answer is read back (or reverts on an error).
  const [pending, setPending] = useState<{ id: string; on: boolean } | null>(null);
  const userSets = sets.filter((s) => s.type === "userset");
  const resourceSets = sets.filter((s) => s.type === "resourceset" && s.resource);
  if (userSets.length === 0 || resourceSets.length === 0) {
    return <Empty>Add a user set and a resource set (with its resource) to write rules between them.</Empty>;
  }
  const toggle = async (
    body: { user_set: string; permission: string; resource_set: string },
    on: boolean,
  ) => {
    const id = `${body.user_set} ${body.permission} ${body.resource_set}`;
    setPending({ id, on });
    try {
      unwrap(
        on
          ? await api.POST("/v2/facts/{proj_id}/{env_id}/set_rules", { params: { path }, body })
          : await api.DELETE("/v2/facts/{proj_id}/{env_id}/set_rules", { params: { path }, body }),
      );
    } catch (e) {
      notifyError(e);
    } finally {
      await queryClient.invalidateQueries({ queryKey: [...key, "set_rules"] });
      setPending(null);
    }
  };
  return (
    <QueryState query={rules}>
      {(list) => (
        <Stack>
          {resourceSets.map((rs) => {
            const resource = resources.find((r) => r.key === rs.resource?.key);
            const actions = Object.keys(resource?.actions ?? {});
            return (
              <ScrollArea key={rs.id}>
                <Table withColumnBorders aria-label={`Rules on ${rs.key}`}>
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>
                        {rs.key} ({rs.resource?.key})
                      </Table.Th>
                      {actions.map((a) => (
                        <Table.Th key={a} ff="monospace">
                          {a}
                        </Table.Th>
                      ))}
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {userSets.map((us) => (
                      <Table.Tr key={us.id}>
                        <Table.Th scope="row" ff="monospace">
                          {us.key}
                        </Table.Th>
                        {actions.map((a) => {
                          const body = {
                            user_set: us.key,
                            permission: `${rs.resource?.key}:${a}`,
                            resource_set: rs.key,
                          };
                          const id = `${body.user_set} ${body.permission} ${body.resource_set}`;
                          const on =
                            pending?.id === id
                              ? pending.on
                              : list.some(
                                  (r) =>
                                    r.user_set === us.key &&
                                    r.resource_set === rs.key &&
                                    r.permission === body.permission,
                                );
                          return (
                            <Table.Td key={a}>
                              <Checkbox
                                aria-label={`${us.key} may ${a} ${rs.key}`}
                                checked={on}
                                disabled={!canWrite || pending !== null}
                                onChange={() => void toggle(body, !on)}
                              />
                            </Table.Td>
                          );
                        })}
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </ScrollArea>
            );
          })}
        </Stack>
      )}
    </QueryState>
  );
}
