import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
} from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  NodeTracerProvider,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-node";
import type { LogEvent } from "kysely";
import { serviceResource } from "./otel-resource.ts";

/*
 * The OpenTelemetry SDK part of tracing, imported by src/lib/tracing.ts only when tracing is on. The provider is
 * registered globally (W3C trace context propagation, AsyncLocalStorage context), so a statement's span is a child
 * of the request's. Attributes name what was done, never credentials, bodies or SQL parameters.
 */

const MAX_QUERY_TEXT = 2048;

export function startTracingSdk(exporters: ("otlp" | "console")[]) {
  const spanProcessors: SpanProcessor[] = exporters.map(
    (name) => new BatchSpanProcessor(name === "otlp" ? new OTLPTraceExporter() : new ConsoleSpanExporter()),
  );
  const provider = new NodeTracerProvider({ resource: serviceResource(), spanProcessors });
  provider.register();
  const tracer = trace.getTracer("gatehouse");

  return {
    /** A server span for an HTTP request, child of the caller's trace when its headers carry one. */
    startRequest(name: string, headers: Record<string, unknown>, attributes: Attributes): Span {
      const parent = propagation.extract(context.active(), headers);
      return tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
    },
    /** Runs `fn` with `span` as the active span (what runs from it, statements included, is its child). */
    within<T>(span: Span, fn: () => T): T {
      return context.with(trace.setSpan(context.active(), span), fn);
    },
    end(span: Span, attributes: Attributes, failed: boolean): void {
      span.setAttributes(attributes);
      if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
    /**
     * A span for a statement that just ran (Kysely's log event), ending now; only within a traced request (the
     * background's polls and log writes would be traces of one span each).
     */
    statement(system: "sqlite" | "postgresql", event: LogEvent): void {
      if (trace.getSpan(context.active()) === undefined) return;
      const text = event.query.sql;
      const operation = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? "QUERY";
      const ms = event.level === "query" ? event.queryDurationMillis : 0;
      const span = tracer.startSpan(operation, {
        kind: SpanKind.CLIENT,
        startTime: Date.now() - ms,
        attributes: {
          "db.system.name": system,
          "db.operation.name": operation,
          "db.query.text": text.length > MAX_QUERY_TEXT ? text.slice(0, MAX_QUERY_TEXT) : text,
        },
      });
      if (event.level === "error") {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute("error.type", (event.error as Error | undefined)?.name ?? "Error");
      }
      span.end();
    },
    /** A span for a decision of the PDP, ended by the caller. */
    startDecision(attributes: Attributes): Span {
      return tracer.startSpan("pdp.check", { kind: SpanKind.INTERNAL, attributes });
    },
    shutdown: () => provider.shutdown(),
  };
}

export type TracingSdk = ReturnType<typeof startTracingSdk>;
