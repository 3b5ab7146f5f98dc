import { lazy, Suspense, useState } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Button, Code, Group, Select, Stack, Text, TextInput, Title } from "@mantine/core";
import { api, unwrap } from "../api/client";
import { FormModal, formText } from "../components/dialogs";
import { asPage, AttributesInput, parseAttributes } from "../components/fields";
import { Loading, QueryState } from "../components/states";
import { DataTable, RowButton } from "../components/tables";
import { jsonText, named } from "../components/user-text";
import { useEnvPath } from "../queries";
import type { Neighbourhood } from "./InstanceGraph";

const InstanceGraph = lazy(() => import("./InstanceGraph"));

/** One instance: its attributes, tuples in and out, roles assigned on it, and the graph of its neighbourhood. */
export function InstanceDetail({ name, onClose }: { name: string; onClose: () => void }) {
  const { path, base, canWrite } = useEnvPath();
  const queryClient = useQueryClient();
  const [dialog, setDialog] = useState<"attributes" | "assign" | null>(null);
  const instance = useQuery({
    queryKey: [...base, "instance", name],
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/facts/{proj_id}/{env_id}/resource_instances/{instance_id}", {
          params: { path: { ...path, instance_id: name } },
        }),
      ),
  });
  const neighbourhood = useNeighbourhood(name);
  const refresh = () => queryClient.invalidateQueries({ queryKey: base });
  const unassign = async (user: string, role: string) => {
    unwrap(
      await api.DELETE("/v2/facts/{proj_id}/{env_id}/role_assignments", {
        params: { path },
        body: { user, role, resource_instance: name },
      }),
    );
    await refresh();
  };

  return (
    <Stack gap="sm" role="region" aria-label={`Instance ${name}`}>
      <Group justify="space-between">
        <Title order={2} size="h3">
          {name}
        </Title>
        <Group gap="xs">
          {canWrite && (
            <>
              <Button size="xs" variant="light" onClick={() => setDialog("attributes")}>
                Edit attributes
              </Button>
              <Button size="xs" variant="light" onClick={() => setDialog("assign")}>
                Assign a role
              </Button>
            </>
          )}
          <Button size="xs" variant="default" onClick={onClose}>
            Close
          </Button>
        </Group>
      </Group>
      <QueryState query={instance}>
        {(i) => (
          <Text size="sm">
            Tenant <Code>{i.tenant}</Code> · attributes <Code>{jsonText(i.attributes ?? {})}</Code>
          </Text>
        )}
      </QueryState>
      <QueryState query={neighbourhood}>
        {(n) => (
          <>
            <DataTable
              label={`Roles on ${name}`}
              columns={["User", "Role", "On", canWrite && "Actions"]}
              rows={[
                ...n.assignments.map((a) => ({ ...a, derived: undefined })),
                ...n.derived.map((d) => ({ user: d.user, role: d.role, resource_instance: "", derived: d })),
              ]}
              rowKey={(a, i) => `${a.derived ? "d" : "a"}${i}`}
              cells={(a) =>
                a.derived
                  ? [a.user, `${a.role} (derived)`, `from ${a.derived.from} via ${a.derived.via}`, null]
                  : [
                      a.user,
                      a.role,
                      a.resource_instance,
                      canWrite && a.resource_instance === name && (
                        <RowButton
                          label={`Unassign ${a.role} from ${a.user}`}
                          danger
                          onClick={() => void unassign(a.user, a.role)}
                        >
                          Unassign
                        </RowButton>
                      ),
                    ]
              }
            />
            <Suspense fallback={<Loading label="Loading the graph" />}>
              <InstanceGraph data={n} />
            </Suspense>
            {dialog === "assign" && (
              <FormModal
                title={named`Assign a role on ${name}`}
                opened
                onClose={() => setDialog(null)}
                submitLabel="Assign"
                onSubmit={async (form) => {
                  unwrap(
                    await api.POST("/v2/facts/{proj_id}/{env_id}/role_assignments", {
                      params: { path },
                      body: {
                        user: formText(form, "user"),
                        role: formText(form, "role"),
                        resource_instance: name,
                      },
                    }),
                  );
                  await refresh();
                }}
              >
                <TextInput label="User" name="user" required data-autofocus />
                <Select label="Role" name="role" required data={n.roles} />
              </FormModal>
            )}
          </>
        )}
      </QueryState>
      {dialog === "attributes" && instance.data && (
        <FormModal
          title={named`Attributes of ${name}`}
          opened
          onClose={() => setDialog(null)}
          submitLabel="Save"
          onSubmit={async (form) => {
            unwrap(
              await api.PATCH("/v2/facts/{proj_id}/{env_id}/resource_instances/{instance_id}", {
                params: { path: { ...path, instance_id: name } },
                body: { attributes: parseAttributes(formText(form, "attributes")) },
              }),
            );
            await refresh();
          }}
        >
          <AttributesInput value={instance.data.attributes} />
        </FormModal>
      )}
    </Stack>
  );
}

/**
 * An instance's tuples in and out, the roles assigned on it and on its neighbours, the roles derived onto it one hop
 * through its tuples, and the roles its resource type has.
 */
function useNeighbourhood(name: string) {
  const { path, base } = useEnvPath();
  const type = name.slice(0, name.indexOf(":"));
  return useQuery({
    queryKey: [...base, "neighbourhood", name],
    queryFn: async (): Promise<Neighbourhood & { roles: string[] }> => {
      const list = async (query: { subject?: string; object?: string }) =>
        asPage(
          unwrap(
            await api.GET("/v2/facts/{proj_id}/{env_id}/relationship_tuples", {
              params: { path, query: { ...query, per_page: 100 } },
            }),
          ),
        ).data;
      const assignmentsOn = async (resource_instance: string) =>
        (
          unwrap(
            await api.GET("/v2/facts/{proj_id}/{env_id}/role_assignments", {
              params: { path, query: { resource_instance, per_page: 100 } },
            }),
          ) as { user: string; role: string; resource_instance?: string }[]
        ).flatMap((a) => (a.resource_instance ? [{ ...a, resource_instance: a.resource_instance }] : []));
      const [outgoing, incoming, roles] = await Promise.all([
        list({ subject: name }),
        list({ object: name }),
        api.GET("/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/roles", {
          params: { path: { ...path, resource_id: type }, query: { per_page: 100 } },
        }),
      ]);
      const tuples = [...outgoing, ...incoming];
      const neighbours = [...new Set(tuples.map((t) => (t.subject === name ? t.object : t.subject)))];
      const assignments = (await Promise.all([name, ...neighbours].map(assignmentsOn))).flat();
      const roleList = unwrap(roles);
      // One hop of each derivation onto this instance: a role on a subject linked to it by the rule's relation.
      const derived = roleList.flatMap((role) =>
        role.granted_to.users_with_role.flatMap((rule) =>
          incoming
            .filter(
              (t) => t.relation === rule.linked_by_relation && t.subject.startsWith(`${rule.on_resource}:`),
            )
            .flatMap((t) =>
              assignments
                .filter((a) => a.resource_instance === t.subject && a.role === rule.role)
                .map((a) => ({
                  user: a.user,
                  role: `${type}#${role.key}`,
                  from: `${rule.on_resource}#${rule.role} on ${t.subject}`,
                  via: t.relation,
                })),
            ),
        ),
      );
      return { center: name, tuples, assignments, derived, roles: roleList.map((r) => r.key) };
    },
  });
}
