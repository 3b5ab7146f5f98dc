import { BarChart } from "@mantine/charts";
import "@mantine/charts/styles.css";

export type Minute = { minute: string; status_class: string; count: number };

const SERIES = [
  { name: "2xx", color: "teal.7" },
  { name: "3xx", color: "blue.7" },
  { name: "4xx", color: "orange.7" },
  { name: "5xx", color: "red.8" },
  { name: "1xx", color: "gray.6" },
];

/** Calls per minute, one stacked bar per minute with calls, coloured by status class. Its own chunk (recharts). */
export default function ApiLogChart({ data }: { data: Minute[] }) {
  const byMinute = new Map<string, Record<string, number | string>>();
  for (const { minute, status_class, count } of data) {
    const label = new Date(minute).toLocaleString([], {
      month: "short",
      day: "numeric",
      hour: "2-digit",
      minute: "2-digit",
    });
    const row = byMinute.get(minute) ?? { minute: label };
    row[status_class] = count;
    byMinute.set(minute, row);
  }
  const present = new Set(data.map((d) => d.status_class));
  return (
    <BarChart
      h={220}
      data={[...byMinute.values()]}
      dataKey="minute"
      type="stacked"
      withLegend
      series={SERIES.filter((s) => present.has(s.name))}
      yAxisLabel="calls"
      aria-label="Calls per minute by status class"
    />
  );
}
