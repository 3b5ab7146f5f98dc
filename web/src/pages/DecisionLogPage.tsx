import { lazy, useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import {
  Badge,
  Button,
  Code,
  Drawer,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from "@mantine/core";
import { PageFooter } from "../components/paging";
import { ChartSlot, rangeSeconds, TimeRangeSelect, useLogFilters } from "../components/log-filters";
import { api, unwrap } from "../api/client";
import { Empty, QueryState } from "../components/states";
import { useOrg, usePlace } from "../org";
import { jsonText } from "../components/user-text";

const DecisionLogChart = lazy(() => import("./DecisionLogChart"));

const PER_PAGE = 20;
const FILTERS = ["user", "action", "resource", "decision", "range"] as const;

/** The URL's filters as the decision log's query (the range ends at `until`, in Unix seconds). */
function logQuery(params: URLSearchParams, until: number) {
  const user = params.get("user");
  const action = params.get("action");
  const resource = params.get("resource");
  const decision = params.get("decision");
  const range = rangeSeconds(params);
  return {
    ...(user && { users: [user] }),
    ...(action && { action }),
    ...(resource && { resources: [resource] }),
    ...(decision && { decision: decision === "allow" }),
    timestamp_from: until - range,
    timestamp_to: until,
  };
}

/** The environment's decision log: filters in the URL, a chart of allows and denies, each decision's reason. */
export default function DecisionLogPage() {
  const org = useOrg();
  const { proj = "", env = "" } = usePlace();
  const path = { proj_id: proj, env_id: env };
  const { params, page, until, filterKey, apply, goTo } = useLogFilters(FILTERS);
  const [openId, setOpenId] = useState<string | null>(null);
  const query = logQuery(params, until);
  const logs = useQuery({
    queryKey: [org.id, proj, env, "decisions", filterKey, until, page],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/pdps/{proj_id}/{env_id}/audit_logs", {
          params: { path, query: { ...query, query: "none", page, per_page: PER_PAGE } },
        }),
      ),
  });
  const stats = useQuery({
    queryKey: [org.id, proj, env, "decision-stats", filterKey, until],
    queryFn: async () =>
      unwrap(await api.GET("/v2/pdps/{proj_id}/{env_id}/decision_logs/stats", { params: { path, query } })),
  });

  return (
    <Stack>
      <Title order={1} size="h2">
        Decision log
      </Title>
      <form onSubmit={apply} aria-label="Filters">
        <SimpleGrid cols={{ base: 1, sm: 3, lg: 6 }} spacing="sm" style={{ alignItems: "end" }}>
          <TextInput
            label="User"
            name="user"
            placeholder="user key"
            defaultValue={params.get("user") ?? ""}
          />
          <TextInput label="Action" name="action" defaultValue={params.get("action") ?? ""} />
          <TextInput label="Resource type" name="resource" defaultValue={params.get("resource") ?? ""} />
          <Select
            label="Decision"
            name="decision"
            placeholder="any"
            clearable
            defaultValue={params.get("decision")}
            data={[
              { value: "allow", label: "Allowed" },
              { value: "deny", label: "Denied" },
            ]}
          />
          <TimeRangeSelect params={params} />
          <Button type="submit">Apply</Button>
        </SimpleGrid>
      </form>

      <ChartSlot stats={stats} chart={(data) => <DecisionLogChart data={data} />} />

      <QueryState query={logs}>
        {(result) =>
          result.data.length === 0 ? (
            <Empty>No decision matches these filters in this range.</Empty>
          ) : (
            <>
              <Table striped highlightOnHover aria-label="Decisions">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Time</Table.Th>
                    <Table.Th>Decision</Table.Th>
                    <Table.Th>User</Table.Th>
                    <Table.Th>Action</Table.Th>
                    <Table.Th>Resource</Table.Th>
                    <Table.Th>Tenant</Table.Th>
                    <Table.Th>Details</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {result.data.map((d) => (
                    <Table.Tr key={d.id}>
                      <Table.Td>{new Date(d.timestamp).toLocaleString()}</Table.Td>
                      <Table.Td>
                        {d.decision === undefined ? (
                          <Text size="sm">{d.query}</Text>
                        ) : (
                          <Badge color={d.decision ? "teal" : "red"} variant="light">
                            {d.decision ? "Allowed" : "Denied"}
                          </Badge>
                        )}
                      </Table.Td>
                      <Table.Td>{d.user_key ?? ""}</Table.Td>
                      <Table.Td>{d.action ?? ""}</Table.Td>
                      <Table.Td>
                        {d.resource_type ?? ""}
                        {d.resource_key ? `:${d.resource_key}` : ""}
                      </Table.Td>
                      <Table.Td>{d.tenant ?? ""}</Table.Td>
                      <Table.Td>
                        <Button
                          size="compact-xs"
                          variant="subtle"
                          aria-label={`Details of ${d.user_key ?? d.query} ${d.action ?? ""} at ${d.timestamp}`}
                          onClick={() => setOpenId(d.id)}
                        >
                          Details
                        </Button>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
              <PageFooter
                count={`${result.total_count} decisions`}
                total={result.page_count}
                page={page}
                onChange={goTo}
              />
            </>
          )
        }
      </QueryState>
      <Drawer
        opened={openId !== null}
        onClose={() => setOpenId(null)}
        position="right"
        size="xl"
        title="Decision details"
      >
        {openId && <DecisionDetails path={path} id={openId} />}
      </Drawer>
    </Stack>
  );
}

function DecisionDetails({ path, id }: { path: { proj_id: string; env_id: string }; id: string }) {
  const entry = useQuery({
    queryKey: ["decision", path, id],
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/pdps/{proj_id}/{env_id}/audit_logs/{log_id}", {
          params: { path: { ...path, log_id: id } },
        }),
      ),
  });
  return (
    <QueryState query={entry}>
      {(d) => (
        <Stack>
          {d.decision !== undefined && (
            <Badge color={d.decision ? "teal" : "red"} size="lg" variant="light">
              {d.decision ? "Allowed" : "Denied"}
            </Badge>
          )}
          <Text size="sm">
            {new Date(d.timestamp).toLocaleString()} · {d.query} · revision {d.revision} · {d.latency_us} µs
          </Text>
          <Stack gap={4}>
            <Text fw={500} size="sm">
              Reason
            </Text>
            <Text size="sm" role="group" aria-label="Reason">
              {d.reason ?? "none"}
            </Text>
          </Stack>
          <Stack gap={4}>
            <Text fw={500} size="sm">
              Input
            </Text>
            <Code block>{jsonText(d.input ?? null, 2)}</Code>
          </Stack>
          <Stack gap={4}>
            <Text fw={500} size="sm">
              Result
            </Text>
            <Code block>{jsonText(d.result ?? null, 2)}</Code>
          </Stack>
        </Stack>
      )}
    </QueryState>
  );
}
