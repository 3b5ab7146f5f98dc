import { LogController, type FastifyServerOptions } from "fastify";

/**
 * The log every server writes: JSON lines, or readable lines (pino-pretty) when standard output is a terminal.
 * Credentials in request headers are redacted wherever a request is logged.
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
