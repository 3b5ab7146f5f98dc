import { lazy, useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import {
  Badge,
  Button,
  Code,
  Drawer,
  Group,
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
import { useOrg } from "../org";
import { jsonText } from "../components/user-text";

const ApiLogChart = lazy(() => import("./ApiLogChart"));

const PER_PAGE = 20;
const FILTERS = ["status", "method", "path", "actor", "range"] as const;

/** The URL's filters as the history routes' query (the range ends at `until`, in Unix seconds). */
function historyQuery(params: URLSearchParams, until: number) {
  const status = (params.get("status") ?? "")
    .split(/[\s,]+/)
    .map(Number)
    .filter((n) => Number.isInteger(n) && n >= 100 && n <= 599);
  const method = params.get("method");
  const path = params.get("path");
  const actor = params.get("actor");
  const range = rangeSeconds(params);
  return {
    ...(status.length > 0 && { status_code: status }),
    ...(method && { method: [method] }),
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
  const { params, page, until, filterKey, apply, goTo } = useLogFilters(FILTERS);
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
      <form onSubmit={apply} aria-label="Filters">
        <SimpleGrid cols={{ base: 1, sm: 3, lg: 6 }} spacing="sm" style={{ alignItems: "end" }}>
          <TextInput
            label="Status codes"
            name="status"
            placeholder="e.g. 200, 404"
            defaultValue={params.get("status") ?? ""}
          />
          <Select
            label="Method"
            name="method"
            placeholder="any"
            clearable
            defaultValue={params.get("method")}
            data={["GET", "POST", "PUT", "PATCH", "DELETE"]}
          />
          <TextInput label="Path" name="path" placeholder="/v2/..." defaultValue={params.get("path") ?? ""} />
          <TextInput
            label="Actor"
            name="actor"
            placeholder="member e-mail or key name"
            defaultValue={params.get("actor") ?? ""}
          />
          <TimeRangeSelect params={params} />
          <Button type="submit">Apply</Button>
        </SimpleGrid>
      </form>

      <ChartSlot stats={stats} chart={(data) => <ApiLogChart data={data} />} />

      <QueryState query={events}>
        {(result) =>
          result.data.length === 0 ? (
            <Empty>No call matches these filters in this range.</Empty>
          ) : (
            <>
              <Table striped highlightOnHover>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Time</Table.Th>
                    <Table.Th>Status</Table.Th>
                    <Table.Th>Method</Table.Th>
                    <Table.Th>Path</Table.Th>
                    <Table.Th>Actor</Table.Th>
                    <Table.Th>Details</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {result.data.map((e) => (
                    <Table.Tr key={e.id}>
                      <Table.Td>{new Date(e.timestamp).toLocaleString()}</Table.Td>
                      <Table.Td>
                        <Badge color={statusColor(e.status)} variant="light">
                          {e.status}
                        </Badge>
                      </Table.Td>
                      <Table.Td>{e.method}</Table.Td>
                      <Table.Td>
                        <Text ff="monospace" size="sm">
                          {e.path}
                        </Text>
                      </Table.Td>
                      <Table.Td>{e.actor_display_name ?? e.actor_type}</Table.Td>
                      <Table.Td>
                        <Button
                          size="compact-xs"
                          variant="subtle"
                          aria-label={`Details of ${e.method} ${e.path} at ${e.timestamp}`}
                          onClick={() => setOpenId(e.id)}
                        >
                          Details
                        </Button>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
              <PageFooter
                count={`${result.total_count} calls`}
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
        title="Call details"
      >
        {openId && <EventDetails id={openId} />}
      </Drawer>
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
