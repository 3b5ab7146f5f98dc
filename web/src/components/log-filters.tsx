import { Suspense, useState, type FormEvent, type ReactNode } from "react";
import { useSearchParams } from "react-router";
import { Button, Drawer, Select, SimpleGrid, TextInput } from "@mantine/core";
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

/** A log page's filter form: its fields, the time range and Apply, in one row on a wide screen. */
export function FilterForm({
  filters,
  children,
}: {
  filters: ReturnType<typeof useLogFilters>;
  children: ReactNode;
}) {
  return (
    <form onSubmit={filters.apply} aria-label="Filters">
      <SimpleGrid cols={{ base: 1, sm: 3, lg: 6 }} spacing="sm" style={{ alignItems: "end" }}>
        {children}
        <TimeRangeSelect params={filters.params} />
        <Button type="submit">Apply</Button>
      </SimpleGrid>
    </form>
  );
}

/** A text filter, filled from the URL. */
export function FilterText({
  params,
  name,
  label,
  placeholder,
}: {
  params: URLSearchParams;
  name: string;
  label: string;
  placeholder?: string;
}) {
  return (
    <TextInput label={label} name={name} placeholder={placeholder} defaultValue={params.get(name) ?? ""} />
  );
}

/** A choice filter, filled from the URL; cleared, it filters nothing (or falls back to `fallback`). */
export function FilterSelect({
  params,
  name,
  label,
  data,
  fallback,
}: {
  params: URLSearchParams;
  name: string;
  label: string;
  data: (string | { value: string; label: string })[];
  /** The value when the URL has none (then the filter cannot be cleared, only changed). */
  fallback?: string;
}) {
  return (
    <Select
      label={label}
      name={name}
      placeholder="any"
      clearable={fallback === undefined}
      allowDeselect={fallback === undefined}
      defaultValue={params.get(name) ?? fallback ?? null}
      data={data}
    />
  );
}

/** The drawer with one entry's details, open while `id` is set. */
export function DetailsDrawer({
  title,
  id,
  onClose,
  children,
}: {
  title: string;
  id: string | null;
  onClose: () => void;
  children: (id: string) => ReactNode;
}) {
  return (
    <Drawer opened={id !== null} onClose={onClose} position="right" size="xl" title={title}>
      {id && children(id)}
    </Drawer>
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

/**
 * A log page's filters, kept in the URL: the page, the filters' values (for query keys), the end of the time
 * range (when the filters were last applied, so paging keeps the same window), the form's submit and paging.
 */
export function useLogFilters(filters: readonly string[]) {
  const [params, setParams] = useSearchParams();
  const page = Math.max(1, Number(params.get("page") ?? "1") || 1);
  const [until, setUntil] = useState(() => Math.floor(Date.now() / 1000));
  const filterKey = filters.map((f) => params.get(f) ?? "");
  const apply = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const next = new URLSearchParams();
    for (const name of filters) {
      const value = String(form.get(name) ?? "").trim();
      if (value) next.set(name, value);
    }
    setUntil(Math.floor(Date.now() / 1000));
    setParams(next);
  };
  const goTo = (next: number) => {
    const copy = new URLSearchParams(params);
    copy.set("page", String(next));
    setParams(copy);
  };
  return { params, page, until, filterKey, apply, goTo };
}
