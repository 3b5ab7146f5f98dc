import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Anchor, Stack, Text } from "@mantine/core";
import { Link } from "react-router";
import { FilterForm, FilterText, rangeSeconds, useLogFilters } from "../components/log-filters";
import { PagedTable, PageHead } from "../components/tables";
import { api, unwrap } from "../api/client";
import { useOrg } from "../org";
import { sentence, WRITES } from "../activity";

const PER_PAGE = 20;
const FILTERS = ["actor", "object", "range"] as const;

/** The organization's successful writes as sentences, newest first, filtered by who and what (in the URL). */
export default function ActivityPage() {
  const org = useOrg();
  const filters = useLogFilters(FILTERS);
  const { params, page, until, filterKey, goTo } = filters;
  const actor = params.get("actor");
  const object = params.get("object");
  const writes = useQuery({
    queryKey: [org.id, "activity", filterKey, until, page],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/history", {
          params: {
            query: {
              method: WRITES,
              success: true,
              with_request_body: true,
              ...(actor && { actor_display_name: actor }),
              ...(object && { text: object }),
              timestamp_from: until - rangeSeconds(params),
              timestamp_until: until,
              page,
              per_page: PER_PAGE,
            },
          },
        }),
      ),
  });
  return (
    <Stack>
      <PageHead title="Activity" />
      <Text size="sm">
        Who changed what: the successful writes of the organization.{" "}
        <Anchor component={Link} underline="always" to={`/o/${encodeURIComponent(org.key)}/api-log`}>
          Every call, with its bodies, is in the API log.
        </Anchor>
      </Text>
      <FilterForm filters={filters}>
        <FilterText params={params} name="actor" label="Actor" placeholder="member e-mail or key name" />
        <FilterText params={params} name="object" label="Object" placeholder="a key: bob, invoice" />
      </FilterForm>
      <PagedTable
        label="Activity"
        query={writes}
        empty="No write matches these filters in this range."
        noun="write"
        page={page}
        onPage={goTo}
        columns={["Time", "What happened"]}
        rowKey={(e) => e.id}
        cells={(e) => [new Date(e.timestamp).toLocaleString(), sentence(e)]}
      />
    </Stack>
  );
}
