import type { LogEvent } from "kysely";
import type { TracingSdk } from "./tracing-sdk.ts";

/*
 * OpenTelemetry tracing, off unless OTEL_TRACES_EXPORTER names an exporter (`otlp` or `console`), as the standard
 * variables configure it (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER ...). Off, nothing of
 * the SDK is loaded (tracing-sdk.ts is imported only by `startTracing`) and each place that could trace tests
 * `tracing` once. Spans: HTTP requests (src/http/tracing.ts), database statements (`dbTraceLog`), PDP decisions.
 */

/** The SDK's helpers once tracing started; undefined while it is off. */
export let tracing: TracingSdk | undefined;

/** The exporters OTEL_TRACES_EXPORTER names that Gatehouse supports (none: tracing off). */
export function tracesExporters(env: NodeJS.ProcessEnv = process.env): ("otlp" | "console")[] {
  if (env["OTEL_SDK_DISABLED"]?.trim().toLowerCase() === "true") return [];
  const names = (env["OTEL_TRACES_EXPORTER"] ?? "").split(",").map((n) => n.trim().toLowerCase());
  return names.filter((n): n is "otlp" | "console" => n === "otlp" || n === "console");
}

/** Starts tracing when OTEL_TRACES_EXPORTER asks for it; call before the store and the servers are built. */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const exporters = tracesExporters(env);
  if (exporters.length === 0 || tracing) return;
  const { startTracingSdk } = await import("./tracing-sdk.ts");
  tracing = startTracingSdk(exporters);
}

/** Sends the spans still buffered and stops. */
export async function stopTracing(): Promise<void> {
  const sdk = tracing;
  tracing = undefined;
  await sdk?.shutdown();
}

/** Kysely's `log` option: a span per statement while tracing is on (its text, never its parameters). */
export function dbTraceLog(system: "sqlite" | "postgresql"): { log?: (event: LogEvent) => void } {
  const sdk = tracing;
  return sdk ? { log: (event) => sdk.statement(system, event) } : {};
}
