import { PassThrough, type Readable } from "node:stream";
import fp from "fastify-plugin";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import secureJson from "secure-json-parse";
import { AppError } from "../lib/errors.ts";

/** How deep objects and arrays may nest in a request body; Permit's payloads need far less. */
export const MAX_BODY_DEPTH = 64;

/** A body announced larger than the limit is read and discarded up to this much (or this long) before the 413. */
const DRAIN_BYTES_AT_LEAST = 64 * 1024 * 1024;
const DRAIN_MS = 30_000;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The deepest nesting of objects and arrays in JSON text, found without recursion (strings skipped). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > max) max = depth;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}

const invalidJson = () =>
  new AppError("INVALID_INPUT", "the body is not valid JSON", undefined, [
    { loc: ["body"], msg: "invalid JSON", type: "json_invalid" },
  ]);

/** The one JSON body parser of every port (control plane and both PDP ports), so the same rules hold everywhere. */
export function parseJsonBody(body: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new AppError("INVALID_ENCODING", "the body is not valid UTF-8");
  }
  // An empty body is "no body" (some clients send a Content-Type on DELETE).
  if (text.trim() === "") return undefined;
  // Checked before parsing: a body nested thousands deep would exhaust the stack of whatever walks it later.
  if (jsonDepth(text) > MAX_BODY_DEPTH) {
    const message = `the body nests objects and arrays deeper than ${MAX_BODY_DEPTH} levels`;
    throw new AppError("INVALID_INPUT", message, { max_depth: MAX_BODY_DEPTH }, [
      { loc: ["body"], msg: message, type: "json_depth" },
    ]);
  }
  try {
    return secureJson.parse(text, undefined, { protoAction: "remove", constructorAction: "remove" });
  } catch {
    throw invalidJson();
  }
}

/**
 * Reads and discards a request body, up to a bound. Answering before the client has sent its body, then closing,
 * resets the connection while the client still writes, and most clients then never read the answer.
 */
function drain(request: FastifyRequest, maxBytes: number): Promise<void> {
  const raw = request.raw;
  if (raw.complete || raw.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let seen = 0;
    const finish = () => {
      clearTimeout(timer);
      raw.off("data", onData);
      raw.off("end", finish);
      raw.off("error", finish);
      raw.off("close", finish);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > maxBytes) finish();
    };
    const timer = setTimeout(finish, DRAIN_MS);
    raw.on("data", onData);
    raw.on("end", finish);
    raw.on("error", finish);
    raw.on("close", finish);
    raw.resume();
  });
}

const tooLarge = (limit: number) =>
  new AppError("PAYLOAD_TOO_LARGE", `the request body is larger than the server accepts (${limit} bytes)`, {
    limit_bytes: limit,
  });

/**
 * A body without Content-Length (chunked): passed on up to the limit; past it, the rest is read and discarded (up
 * to `drainBytes`) and only then the body fails with 413, for the same reason as `drain`.
 */
function limited(payload: Readable, limit: number, drainBytes: number): Readable {
  const out = new PassThrough();
  let seen = 0;
  payload.on("data", (chunk: Buffer) => {
    seen += chunk.length;
    if (seen <= limit) out.write(chunk);
    else if (seen > drainBytes) {
      payload.removeAllListeners("data");
      out.destroy(tooLarge(limit));
    }
  });
  payload.on("end", () => (seen > limit ? out.destroy(tooLarge(limit)) : out.end()));
  payload.on("error", (error) => out.destroy(error));
  return out;
}

/**
 * The Content-Type of a JSON answer, as Permit sends it: RFC 8259 defines no charset for application/json, and
 * Permit's Python SDK tests compare the header as it is. Fastify's own default adds `; charset=utf-8`.
 */
export const JSON_CONTENT_TYPE = "application/json";
const FASTIFY_JSON_TYPE = "application/json; charset=utf-8";

/** JSON bodies: valid UTF-8, bounded depth, bounded size with a 413 the client can read; JSON answers' type. */
export const jsonBodyPlugin = fp(
  async (app: FastifyInstance, opts: { bodyLimitBytes: number }) => {
    const drainBytes = Math.max(DRAIN_BYTES_AT_LEAST, 4 * opts.bodyLimitBytes);
    // Callback hooks: they run on every request of the PDP ports, and most return at once.
    app.addHook("onRequest", (request: FastifyRequest, reply: FastifyReply, done) => {
      const length = Number(request.headers["content-length"]);
      if (!(length > opts.bodyLimitBytes)) return done();
      void drain(request, drainBytes).then(() => {
        void reply.header("connection", "close");
        done(tooLarge(opts.bodyLimitBytes));
      });
    });
    // Only a chunked body has no length to judge it by up front.
    app.addHook("preParsing", (request, _reply, payload, done) =>
      done(
        null,
        request.headers["transfer-encoding"] === undefined
          ? payload
          : limited(payload, opts.bodyLimitBytes, drainBytes),
      ),
    );
    app.addHook("onSend", (_request, reply, payload, done) => {
      if (reply.getHeader("content-type") === FASTIFY_JSON_TYPE)
        void reply.header("content-type", JSON_CONTENT_TYPE);
      done(null, payload);
    });
    app.removeContentTypeParser("application/json");
    app.addContentTypeParser("application/json", { parseAs: "buffer" }, (_req, body, done) => {
      try {
        done(null, parseJsonBody(body as Buffer));
      } catch (error) {
        done(error as Error, undefined);
      }
    });
  },
  { name: "json-body" },
);
