import { LogController, type FastifyRequest, type FastifyServerOptions } from "fastify";
import { redactQuery } from "../lib/redact.ts";

/**
 * A request's URL as log lines show it: the path alone for a route whose query carries credentials (the SSO
 * callback's code and state: `apiLogQuery: false`, as in the API log), else with secret-looking parameters redacted.
 */
export function loggedUrl(request: Pick<FastifyRequest, "url" | "routeOptions">): string {
  const mark = request.url.indexOf("?");
  if (mark < 0) return request.url;
  const path = request.url.slice(0, mark);
  if (request.routeOptions?.config?.apiLogQuery === false) return path;
  return `${path}?${redactQuery(request.url.slice(mark + 1), [])}`;
}

/**
 * The log every server writes: JSON lines, or readable lines (pino-pretty) when standard output is a terminal.
 * Credentials in request headers are redacted wherever a request is logged, and so are those in its query.
 */
export async function loggerOptions(
  level: string,
  isTerminal = process.stdout.isTTY === true,
): Promise<NonNullable<Exclude<FastifyServerOptions["logger"], boolean>>> {
  const options = {
    level,
    redact: {
      paths: ["req.headers.authorization", "req.headers.cookie", 'req.headers["x-csrf-token"]'],
      censor: "[redacted]",
    },
    serializers: {
      // Fastify's own, with the URL as loggedUrl shows it
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: loggedUrl(request),
        host: request.host,
        remoteAddress: request.ip,
        remotePort: request.socket?.remotePort,
      }),
    },
  };
  if (!isTerminal) return options;
  // Loaded only on a terminal: a service under a supervisor writes JSON and never needs it.
  const { default: pretty } = await import("pino-pretty");
  return {
    ...options,
    stream: pretty({ colorize: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" }),
  };
}

/**
 * Per-request lines ("incoming request", "request completed") at `debug`: at the default `info` level the log
 * says what happened to the service, not every call (the API log keeps those). Errors keep their levels.
 */
export class DebugRequestLogs extends LogController {
  override incomingRequest(...[request]: Parameters<LogController["incomingRequest"]>): void {
    request.log.debug({ req: request }, "incoming request");
  }

  override requestCompleted(...args: Parameters<LogController["requestCompleted"]>): void {
    const [error, , reply] = args;
    if (error) return super.requestCompleted(...args);
    reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, "request completed");
  }
}
