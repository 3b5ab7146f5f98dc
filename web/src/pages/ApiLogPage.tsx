import { lazy, useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Badge, Code, Group, Stack, Text, Title } from "@mantine/core";
import {
  ChartSlot,
  DetailsDrawer,
  FilterForm,
  FilterSelect,
  FilterText,
  rangeSeconds,
  useLogFilters,
} from "../components/log-filters";
import { PagedTable, RowButton } from "../components/tables";
import { api, unwrap } from "../api/client";
import { QueryState } from "../components/states";
import { useOrg } from "../org";
import { jsonText } from "../components/user-text";
import { WRITES } from "../activity";

const ApiLogChart = lazy(() => import("./ApiLogChart"));

const PER_PAGE = 20;
const FILTERS = ["status", "method", "caller", "path", "actor", "range"] as const;

/** The URL's filters as the history routes' query (the range ends at `until`, in Unix seconds). */
function historyQuery(params: URLSearchParams, until: number) {
  const status = (params.get("status") ?? "")
    .split(/[\s,]+/)
    .map(Number)
    .filter((n) => Number.isInteger(n) && n >= 100 && n <= 599);
  // Writes unless the URL says otherwise: an hour of clicking in the dashboard makes hundreds of reads.
  const method = params.get("method") ?? "writes";
  const caller = params.get("caller");
  const path = params.get("path");
  const actor = params.get("actor");
  const range = rangeSeconds(params);
  return {
    ...(status.length > 0 && { status_code: status }),
    ...(method !== "all" && { method: method === "writes" ? WRITES : [method] }),
    ...(caller && { actor_type: [caller] }),
    ...(path && { path: [path] }),
    ...(actor && { actor_display_name: actor }),
    timestamp_from: until - range,
    timestamp_until: until,
  };
}

const statusColor = (status: number) =>
  status >= 500 ? "red" : status >= 400 ? "orange" : status >= 300 ? "blue" : "teal";

/** A recorded body, pretty-printed when it is JSON. */
function Body({ label, text }: { label: string; text: string | undefined }) {
  let shown = text ?? "";
  try {
    if (shown) shown = jsonText(JSON.parse(shown), 2);
  } catch {
    // Not JSON (or truncated): shown as recorded.
  }
  return (
    <Stack gap={4}>
      <Text fw={500} size="sm">
        {label}
      </Text>
      {shown ? (
        <Code block aria-label={label}>
          {shown}
        </Code>
      ) : (
        <Text size="sm" c="dimmed">
          none
        </Text>
      )}
    </Stack>
  );
}

/** The organization's API log: filters in the URL, newest first, a page at a time, per-minute chart, details. */
export default function ApiLogPage() {
  const org = useOrg();
  const filters = useLogFilters(FILTERS);
  const { params, page, until, filterKey, goTo } = filters;
  const [openId, setOpenId] = useState<string | null>(null);
  const query = historyQuery(params, until);
  const events = useQuery({
    queryKey: [org.id, "history", filterKey, until, page],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      unwrap(await api.GET("/v2/history", { params: { query: { ...query, page, per_page: PER_PAGE } } })),
  });
  const stats = useQuery({
    queryKey: [org.id, "history-stats", filterKey, until],
    queryFn: async () => unwrap(await api.GET("/v2/history/stats", { params: { query } })),
  });

  return (
    <Stack>
      <Title order={1} size="h2">
        API log
      </Title>
      <FilterForm filters={filters}>
        <FilterText params={params} name="status" label="Status codes" placeholder="e.g. 200, 404" />
        <FilterSelect
          params={params}
          name="method"
          label="Method"
          fallback="writes"
          data={[
            { value: "writes", label: "Writes (POST, PUT, PATCH, DELETE)" },
            { value: "all", label: "All methods" },
            ...["GET", "POST", "PUT", "PATCH", "DELETE"],
          ]}
        />
        <FilterSelect
          params={params}
          name="caller"
          label="Caller"
          data={[
            { value: "api_key", label: "API keys (no dashboard calls)" },
            { value: "member", label: "Members in the dashboard" },
          ]}
        />
        <FilterText params={params} name="path" label="Path" placeholder="/v2/..." />
        <FilterText params={params} name="actor" label="Actor" placeholder="member e-mail or key name" />
      </FilterForm>

      <ChartSlot stats={stats} chart={(data) => <ApiLogChart data={data} />} />

      <PagedTable
        query={events}
        empty="No call matches these filters in this range."
        noun="call"
        page={page}
        onPage={goTo}
        highlightOnHover
        columns={["Time", "Status", "Method", "Path", "Actor", "Details"]}
        rowKey={(e) => e.id}
        cells={(e) => [
          new Date(e.timestamp).toLocaleString(),
          <Badge color={statusColor(e.status)} variant="light">
            {e.status}
          </Badge>,
          <span className="whole-word">{e.method}</span>,
          <Text ff="monospace" size="sm">
            {e.path}
          </Text>,
          e.actor_display_name ?? e.actor_type,
          <RowButton
            label={`Details of ${e.method} ${e.path} at ${e.timestamp}`}
            onClick={() => setOpenId(e.id)}
          >
            Details
          </RowButton>,
        ]}
      />
      <DetailsDrawer title="Call details" id={openId} onClose={() => setOpenId(null)}>
        {(id) => <EventDetails id={id} />}
      </DetailsDrawer>
    </Stack>
  );
}

function EventDetails({ id }: { id: string }) {
  const event = useQuery({
    queryKey: ["history-event", id],
    queryFn: async () =>
      unwrap(await api.GET("/v2/history/{event_id}", { params: { path: { event_id: id } } })),
  });
  return (
    <QueryState query={event}>
      {(e) => (
        <Stack>
          <Group gap="xs">
            <Badge color={statusColor(e.status)} variant="light">
              {e.status}
            </Badge>
            <Text ff="monospace">
              {e.method} {e.path}
            </Text>
          </Group>
          <Text size="sm">
            {new Date(e.timestamp).toLocaleString()} · {e.actor_display_name ?? e.actor_type} ({e.actor_type})
            · {e.client_ip}
            {e.project_key ? ` · ${e.project_key}${e.env_key ? ` / ${e.env_key}` : ""}` : ""}
          </Text>
          <Body label="Request body" text={e.request_body} />
          <Body label="Response body" text={e.response_body} />
        </Stack>
      )}
    </QueryState>
  );
}
