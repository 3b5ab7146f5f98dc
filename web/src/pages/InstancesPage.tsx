import { lazy, Suspense, useState } from "react";
import { useSearchParams } from "react-router";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Button, Code, Group, Select, Stack, Table, Text, TextInput, Title } from "@mantine/core";
import { api, unwrap } from "../api/client";
import { FormModal, formText, TypedConfirmModal } from "../components/dialogs";
import { asPage, AttributesInput, parseAttributes } from "../components/fields";
import { PageFooter, SearchInput, usePagedSearch } from "../components/paging";
import { Empty, Loading, QueryState } from "../components/states";
import { useOrg, usePlace } from "../org";
import { usePlaceIds } from "../queries";
import { useMayWrite } from "../session";
import type { Neighbourhood } from "./InstanceGraph";
import { named, jsonText } from "../components/user-text";

const InstanceGraph = lazy(() => import("./InstanceGraph"));

const PER_PAGE = 20;

type Path = { proj_id: string; env_id: string };
type Tuple = { subject: string; relation: string; object: string; tenant: string };

function useEnvPath() {
  const org = useOrg();
  const { proj = "", env = "" } = usePlace();
  const canWrite = useMayWrite(usePlaceIds(proj, env));
  return { org, path: { proj_id: proj, env_id: env } as Path, base: [org.id, proj, env], canWrite };
}

function useResourceTypes(path: Path, base: unknown[]) {
  return useQuery({
    queryKey: [...base, "resources-all"],
    queryFn: async () =>
      asPage(
        unwrap(
          await api.GET("/v2/schema/{proj_id}/{env_id}/resources", {
            params: { path, query: { per_page: 100 } },
          }),
        ),
      ).data,
  });
}

/** Resource instances (paged, searched on the server), relationship tuples, and one instance's neighbourhood. */
export default function InstancesPage() {
  const { path, base, canWrite } = useEnvPath();
  const paged = usePagedSearch();
  const { page, query, goTo } = paged;
  const [params, setParams] = useSearchParams();
  const selected = params.get("instance");
  const [dialog, setDialog] = useState<{ kind: "new" } | { kind: "delete"; name: string } | null>(null);
  const queryClient = useQueryClient();
  const resources = useResourceTypes(path, base);
  const instances = useQuery({
    queryKey: [...base, "instances", query, page],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      asPage(
        unwrap(
          await api.GET("/v2/facts/{proj_id}/{env_id}/resource_instances", {
            params: {
              path,
              query: {
                page,
                per_page: PER_PAGE,
                include_total_count: true,
                ...(query && { search: [query] }),
              },
            },
          }),
        ),
      ),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: base });
  const open = (name: string | null) => {
    const next = new URLSearchParams(params);
    if (name) next.set("instance", name);
    else next.delete("instance");
    setParams(next);
  };

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Instances and relationships
        </Title>
        {canWrite && <Button onClick={() => setDialog({ kind: "new" })}>New instance</Button>}
      </Group>
      <SearchInput label="Search instances" placeholder="instance key" paged={paged} />
      <QueryState query={instances}>
        {(result) =>
          result.data.length === 0 ? (
            <Empty>
              {query ? `No instance matches “${query}”.` : "No resource instance in this environment yet."}
            </Empty>
          ) : (
            <>
              <Table striped aria-label="Instances">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Instance</Table.Th>
                    <Table.Th>Tenant</Table.Th>
                    <Table.Th>Attributes</Table.Th>
                    <Table.Th>Actions</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {result.data.map((i) => {
                    const name = `${i.resource}:${i.key}`;
                    return (
                      <Table.Tr key={i.id}>
                        <Table.Td>
                          <Text ff="monospace" size="sm">
                            {name}
                          </Text>
                        </Table.Td>
                        <Table.Td>{i.tenant}</Table.Td>
                        <Table.Td>
                          <Text ff="monospace" size="xs">
                            {jsonText(i.attributes ?? {})}
                          </Text>
                        </Table.Td>
                        <Table.Td>
                          <Group gap="xs" wrap="nowrap">
                            <Button
                              size="compact-xs"
                              variant="subtle"
                              aria-label={`Open ${name}`}
                              onClick={() => open(name)}
                            >
                              Open
                            </Button>
                            {canWrite && (
                              <Button
                                size="compact-xs"
                                variant="subtle"
                                color="red"
                                aria-label={`Delete ${name}`}
                                onClick={() => setDialog({ kind: "delete", name })}
                              >
                                Delete
                              </Button>
                            )}
                          </Group>
                        </Table.Td>
                      </Table.Tr>
                    );
                  })}
                </Table.Tbody>
              </Table>
              <PageFooter
                count={`${result.total_count} instances`}
                total={result.page_count}
                page={page}
                onChange={(next) => goTo(next)}
              />
            </>
          )
        }
      </QueryState>

      {selected && <InstanceDetail name={selected} onClose={() => open(null)} />}
      <TuplesSection />

      <FormModal
        title="New instance"
        opened={dialog?.kind === "new"}
        onClose={() => setDialog(null)}
        submitLabel="Create"
        onSubmit={async (form) => {
          unwrap(
            await api.POST("/v2/facts/{proj_id}/{env_id}/resource_instances", {
              params: { path },
              body: {
                resource: formText(form, "resource"),
                key: formText(form, "key"),
                tenant: formText(form, "tenant") || "default",
                attributes: parseAttributes(formText(form, "attributes")),
              },
            }),
          );
          await refresh();
        }}
      >
        <Select
          label="Resource type"
          name="resource"
          required
          data={(resources.data ?? []).map((r) => r.key)}
          data-autofocus
        />
        <TextInput label="Key" name="key" required />
        <TextInput label="Tenant" name="tenant" placeholder="default" />
        <AttributesInput />
      </FormModal>

      {dialog?.kind === "delete" && (
        <TypedConfirmModal
          title={named`Delete instance ${dialog.name}`}
          opened
          onClose={() => setDialog(null)}
          confirmText={dialog.name}
          consequence="Deletes the instance, its relationship tuples and the roles assigned on it."
          onConfirm={async () => {
            unwrap(
              await api.DELETE("/v2/facts/{proj_id}/{env_id}/resource_instances/{instance_id}", {
                params: { path: { ...path, instance_id: dialog.name } },
              }),
            );
            if (selected === dialog.name) open(null);
            await refresh();
          }}
        />
      )}
    </Stack>
  );
}

/** One instance: its attributes, tuples in and out, roles assigned on it, and the graph of its neighbourhood. */
function InstanceDetail({ name, onClose }: { name: string; onClose: () => void }) {
  const { path, base, canWrite } = useEnvPath();
  const queryClient = useQueryClient();
  const [dialog, setDialog] = useState<"attributes" | "assign" | null>(null);
  const type = name.slice(0, name.indexOf(":"));
  const instance = useQuery({
    queryKey: [...base, "instance", name],
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/facts/{proj_id}/{env_id}/resource_instances/{instance_id}", {
          params: { path: { ...path, instance_id: name } },
        }),
      ),
  });
  const neighbourhood = useQuery({
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
  const refresh = () => queryClient.invalidateQueries({ queryKey: base });

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
            <Table striped aria-label={`Roles on ${name}`}>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>User</Table.Th>
                  <Table.Th>Role</Table.Th>
                  <Table.Th>On</Table.Th>
                  <Table.Th>Actions</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {n.assignments.map((a, i) => (
                  <Table.Tr key={`a${i}`}>
                    <Table.Td>{a.user}</Table.Td>
                    <Table.Td>{a.role}</Table.Td>
                    <Table.Td>{a.resource_instance}</Table.Td>
                    <Table.Td>
                      {canWrite && a.resource_instance === name && (
                        <Button
                          size="compact-xs"
                          variant="subtle"
                          color="red"
                          aria-label={`Unassign ${a.role} from ${a.user}`}
                          onClick={() =>
                            void (async () => {
                              unwrap(
                                await api.DELETE("/v2/facts/{proj_id}/{env_id}/role_assignments", {
                                  params: { path },
                                  body: { user: a.user, role: a.role, resource_instance: name },
                                }),
                              );
                              await refresh();
                            })()
                          }
                        >
                          Unassign
                        </Button>
                      )}
                    </Table.Td>
                  </Table.Tr>
                ))}
                {n.derived.map((d, i) => (
                  <Table.Tr key={`d${i}`}>
                    <Table.Td>{d.user}</Table.Td>
                    <Table.Td>{d.role} (derived)</Table.Td>
                    <Table.Td>
                      from {d.from} via {d.via}
                    </Table.Td>
                    <Table.Td />
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
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

/** Relationship tuples, filtered by subject, relation or object; create and delete. */
function TuplesSection() {
  const { path, base, canWrite } = useEnvPath();
  const queryClient = useQueryClient();
  const [filter, setFilter] = useState({ subject: "", relation: "", object: "" });
  const [page, setPage] = useState(1);
  const [creating, setCreating] = useState(false);
  const tuples = useQuery({
    queryKey: [...base, "tuples", filter, page],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      asPage(
        unwrap(
          await api.GET("/v2/facts/{proj_id}/{env_id}/relationship_tuples", {
            params: {
              path,
              query: {
                page,
                per_page: PER_PAGE,
                include_total_count: true,
                ...(filter.subject && { subject: filter.subject }),
                ...(filter.relation && { relation: filter.relation }),
                ...(filter.object && { object: filter.object }),
              },
            },
          }),
        ),
      ),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: base });
  const remove = async (t: Tuple) => {
    unwrap(
      await api.DELETE("/v2/facts/{proj_id}/{env_id}/relationship_tuples", {
        params: { path },
        body: { subject: t.subject, relation: t.relation, object: t.object },
      }),
    );
    await refresh();
  };
  const field = (name: keyof typeof filter, label: string) => (
    <TextInput
      label={label}
      placeholder="type:key"
      value={filter[name]}
      onChange={(e) => {
        setFilter({ ...filter, [name]: e.currentTarget.value.trim() });
        setPage(1);
      }}
    />
  );
  return (
    <Stack gap="sm">
      <Group justify="space-between">
        <Title order={2} size="h3">
          Relationship tuples
        </Title>
        {canWrite && <Button onClick={() => setCreating(true)}>New tuple</Button>}
      </Group>
      <Group grow>
        {field("subject", "Subject")}
        {field("relation", "Relation")}
        {field("object", "Object")}
      </Group>
      <QueryState query={tuples}>
        {(result) =>
          result.data.length === 0 ? (
            <Empty>No tuple matches.</Empty>
          ) : (
            <>
              <Table striped aria-label="Tuples">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Subject</Table.Th>
                    <Table.Th>Relation</Table.Th>
                    <Table.Th>Object</Table.Th>
                    <Table.Th>Tenant</Table.Th>
                    <Table.Th>Actions</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {result.data.map((t) => (
                    <Table.Tr key={t.id}>
                      <Table.Td>{t.subject}</Table.Td>
                      <Table.Td>{t.relation}</Table.Td>
                      <Table.Td>{t.object}</Table.Td>
                      <Table.Td>{t.tenant}</Table.Td>
                      <Table.Td>
                        {canWrite && (
                          <Button
                            size="compact-xs"
                            variant="subtle"
                            color="red"
                            aria-label={`Delete tuple ${t.subject} ${t.relation} ${t.object}`}
                            onClick={() => void remove(t)}
                          >
                            Delete
                          </Button>
                        )}
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
              <PageFooter
                count={`${result.total_count} tuples`}
                total={result.page_count}
                page={page}
                onChange={setPage}
              />
            </>
          )
        }
      </QueryState>
      <FormModal
        title="New relationship tuple"
        opened={creating}
        onClose={() => setCreating(false)}
        submitLabel="Create"
        onSubmit={async (form) => {
          unwrap(
            await api.POST("/v2/facts/{proj_id}/{env_id}/relationship_tuples", {
              params: { path },
              body: {
                subject: formText(form, "subject"),
                relation: formText(form, "relation"),
                object: formText(form, "object"),
                ...(formText(form, "tenant") && { tenant: formText(form, "tenant") }),
              },
            }),
          );
          await refresh();
        }}
      >
        <TextInput label="Subject" name="subject" placeholder="type:key" required data-autofocus />
        <TextInput label="Relation" name="relation" required />
        <TextInput label="Object" name="object" placeholder="type:key" required />
        <TextInput label="Tenant" name="tenant" placeholder="the instances' tenant" />
      </FormModal>
    </Stack>
  );
}
