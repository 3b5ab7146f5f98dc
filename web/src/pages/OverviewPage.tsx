import { useQuery } from "@tanstack/react-query";
import { Badge, Card, Group, SimpleGrid, Stack, Table, Text, Title } from "@mantine/core";
import { api, unwrap } from "../api/client";
import { asPage } from "../components/fields";
import { Empty, QueryState } from "../components/states";
import { useOrg, usePlace } from "../org";
import { usePlaceIds } from "../queries";

type Counted = { total_count: number };

/** The environment's landing page: how much it holds, how far its PDP is behind, what changed last. */
export default function OverviewPage() {
  const org = useOrg();
  const { proj = "", env = "" } = usePlace();
  const ids = usePlaceIds(proj, env);
  const path = { proj_id: proj, env_id: env };
  const one = { page: 1, per_page: 1, include_total_count: true } as const;
  const counts = useQuery({
    queryKey: [org.id, proj, env, "overview-counts"],
    queryFn: async () => {
      const total = (r: unknown) =>
        (asPage(r as never[] | (Counted & { data: never[]; page_count: number })) as Counted).total_count;
      const [users, tenants, roles, resources, instances, tuples] = await Promise.all([
        api.GET("/v2/facts/{proj_id}/{env_id}/users", { params: { path, query: { page: 1, per_page: 1 } } }),
        api.GET("/v2/facts/{proj_id}/{env_id}/tenants", { params: { path, query: one } }),
        api.GET("/v2/schema/{proj_id}/{env_id}/roles", { params: { path, query: one } }),
        api.GET("/v2/schema/{proj_id}/{env_id}/resources", { params: { path, query: one } }),
        api.GET("/v2/facts/{proj_id}/{env_id}/resource_instances", { params: { path, query: one } }),
        api.GET("/v2/facts/{proj_id}/{env_id}/relationship_tuples", { params: { path, query: one } }),
      ]);
      return [
        { label: "Users", n: total(unwrap(users)) },
        { label: "Tenants", n: total(unwrap(tenants)) },
        { label: "Roles", n: total(unwrap(roles)) },
        { label: "Resources", n: total(unwrap(resources)) },
        { label: "Instances", n: total(unwrap(instances)) },
        { label: "Tuples", n: total(unwrap(tuples)) },
      ];
    },
  });
  const status = useQuery({
    queryKey: [org.id, proj, env, "pdp-status"],
    refetchInterval: 5000,
    queryFn: async () => unwrap(await api.GET("/v2/pdps/{proj_id}/{env_id}/status", { params: { path } })),
  });
  const changes = useQuery({
    queryKey: [org.id, proj, env, "latest-changes", ids.environmentId],
    enabled: ids.environmentId !== undefined,
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/history", {
          params: {
            query: {
              env_id: [ids.environmentId ?? ""],
              method: ["POST", "PUT", "PATCH", "DELETE"],
              page: 1,
              per_page: 10,
            },
          },
        }),
      ),
  });

  return (
    <Stack>
      <Title order={1} size="h2">
        Overview
      </Title>
      <QueryState query={counts}>
        {(list) => (
          <SimpleGrid cols={{ base: 2, sm: 3, lg: 6 }} role="group" aria-label="Counts">
            {list.map((c) => (
              <Card key={c.label} withBorder padding="sm" role="group" aria-label={`${c.label}: ${c.n}`}>
                <Text size="sm" c="dimmed">
                  {c.label}
                </Text>
                <Text fw={700} size="xl">
                  {c.n}
                </Text>
              </Card>
            ))}
          </SimpleGrid>
        )}
      </QueryState>
      <Title order={2} size="h4">
        Embedded PDP
      </Title>
      <QueryState query={status}>
        {(s) => (
          <Group role="group" aria-label="PDP status">
            <Text size="sm">
              Environment revision <b>{s.environment_revision}</b>
            </Text>
            <Text size="sm">
              PDP revision <b>{s.pdp_revision}</b>
            </Text>
            <Badge color={s.revisions_behind === 0 ? "teal" : "orange"} variant="light">
              {s.revisions_behind === 0 ? "in sync" : `${s.revisions_behind} revisions behind`}
            </Badge>
            <Text size="sm" c="dimmed">
              lag {s.lag_ms} ms
            </Text>
          </Group>
        )}
      </QueryState>
      <Title order={2} size="h4">
        Latest changes
      </Title>
      <QueryState query={changes}>
        {(result) =>
          result.data.length === 0 ? (
            <Empty>No change recorded in this environment yet.</Empty>
          ) : (
            <Table striped>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Time</Table.Th>
                  <Table.Th>Status</Table.Th>
                  <Table.Th>Call</Table.Th>
                  <Table.Th>Actor</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {result.data.map((e) => (
                  <Table.Tr key={e.id}>
                    <Table.Td>{new Date(e.timestamp).toLocaleString()}</Table.Td>
                    <Table.Td>{e.status}</Table.Td>
                    <Table.Td>
                      <Text ff="monospace" size="sm">
                        {e.method} {e.path}
                      </Text>
                    </Table.Td>
                    <Table.Td>{e.actor_display_name ?? e.actor_type}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          )
        }
      </QueryState>
    </Stack>
  );
}
