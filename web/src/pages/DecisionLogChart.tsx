import { BarChart } from "@mantine/charts";
import "@mantine/charts/styles.css";

export type DecisionMinute = { minute: string; decision: "allow" | "deny"; count: number };

/** Checks per minute, allowed and denied stacked. Its own chunk (recharts), shared with the API log's chart. */
export default function DecisionLogChart({ data }: { data: DecisionMinute[] }) {
  const byMinute = new Map<string, Record<string, number | string>>();
  for (const { minute, decision, count } of data) {
    const label = new Date(minute).toLocaleString([], {
      month: "short",
      day: "numeric",
      hour: "2-digit",
      minute: "2-digit",
    });
    const row = byMinute.get(minute) ?? { minute: label, allow: 0, deny: 0 };
    row[decision] = count;
    byMinute.set(minute, row);
  }
  return (
    <BarChart
      h={200}
      data={[...byMinute.values()]}
      dataKey="minute"
      type="stacked"
      withLegend
      series={[
        { name: "allow", label: "allowed", color: "teal.7" },
        { name: "deny", label: "denied", color: "red.8" },
      ]}
      yAxisLabel="checks"
      aria-label="Checks per minute, allowed and denied"
    />
  );
}
