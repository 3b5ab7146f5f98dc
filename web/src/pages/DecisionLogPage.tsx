import { lazy, useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Code, Stack, Text, Title } from "@mantine/core";
import {
  ChartSlot,
  DetailsDrawer,
  FilterForm,
  FilterSelect,
  FilterText,
  rangeSeconds,
  useLogFilters,
} from "../components/log-filters";
import { Verdict } from "../components/reason";
import { PagedTable, RowButton } from "../components/tables";
import { api, unwrap } from "../api/client";
import { QueryState } from "../components/states";
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
  const filters = useLogFilters(FILTERS);
  const { params, page, until, filterKey, goTo } = filters;
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
      <FilterForm filters={filters}>
        <FilterText params={params} name="user" label="User" placeholder="user key" />
        <FilterText params={params} name="action" label="Action" />
        <FilterText params={params} name="resource" label="Resource type" />
        <FilterSelect
          params={params}
          name="decision"
          label="Decision"
          data={[
            { value: "allow", label: "Allowed" },
            { value: "deny", label: "Denied" },
          ]}
        />
      </FilterForm>

      <ChartSlot stats={stats} chart={(data) => <DecisionLogChart data={data} />} />

      <PagedTable
        query={logs}
        empty="No decision matches these filters in this range."
        noun="decision"
        page={page}
        onPage={goTo}
        highlightOnHover
        label="Decisions"
        columns={["Time", "Decision", "User", "Action", "Resource", "Tenant", "Details"]}
        rowKey={(d) => d.id}
        cells={(d) => [
          new Date(d.timestamp).toLocaleString(),
          d.decision === undefined ? <Text size="sm">{d.query}</Text> : <Verdict allow={d.decision} />,
          d.user_key ?? "",
          d.action ?? "",
          `${d.resource_type ?? ""}${d.resource_key ? `:${d.resource_key}` : ""}`,
          d.tenant ?? "",
          <RowButton
            label={`Details of ${d.user_key ?? d.query} ${d.action ?? ""} at ${d.timestamp}`}
            onClick={() => setOpenId(d.id)}
          >
            Details
          </RowButton>,
        ]}
      />
      <DetailsDrawer title="Decision details" id={openId} onClose={() => setOpenId(null)}>
        {(id) => <DecisionDetails path={path} id={id} />}
      </DetailsDrawer>
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
          {d.decision !== undefined && <Verdict allow={d.decision} size="lg" />}
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
