import { Suspense, type ReactNode } from "react";
import { Select } from "@mantine/core";
import type { UseQueryResult } from "@tanstack/react-query";
import { ErrorState, Loading } from "./states";

const RANGES: Record<string, number> = { "15m": 15 * 60, "1h": 3600, "24h": 24 * 3600, "7d": 7 * 24 * 3600 };

/** The URL's time range (`range`, default the last hour) in seconds. */
export const rangeSeconds = (params: URLSearchParams): number => RANGES[params.get("range") ?? "1h"] ?? 3600;

/** The time range filter of a log page, kept in the URL as `range`. */
export function TimeRangeSelect({ params }: { params: URLSearchParams }) {
  return (
    <Select
      label="Time range"
      name="range"
      allowDeselect={false}
      defaultValue={params.get("range") ?? "1h"}
      data={[
        { value: "15m", label: "Last 15 minutes" },
        { value: "1h", label: "Last hour" },
        { value: "24h", label: "Last 24 hours" },
        { value: "7d", label: "Last 7 days" },
      ]}
    />
  );
}

/** A log page's chart of per-minute counts: loading, its error, nothing when empty, else `chart` (lazy). */
export function ChartSlot<T>({
  stats,
  chart,
}: {
  stats: UseQueryResult<{ data: T[] }>;
  chart: (data: T[]) => ReactNode;
}) {
  if (stats.error) return <ErrorState error={stats.error} />;
  if (!stats.data) return <Loading label="Loading the chart" />;
  if (stats.data.data.length === 0) return null;
  return <Suspense fallback={<Loading label="Loading the chart" />}>{chart(stats.data.data)}</Suspense>;
}
