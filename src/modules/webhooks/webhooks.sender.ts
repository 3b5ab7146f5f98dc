import { createHmac, randomBytes } from "node:crypto";
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { promises as dns } from "node:dns";
import http from "node:http";
import https from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";

/**
 * Sending a delivery: the Standard Webhooks signature, and a request that never reaches a private, loopback or
 * link-local address unless the operator allows it (checked on the address actually connected to, so a name that
 * resolved to a public address when the subscription was saved and to 127.0.0.1 now is refused: DNS rebinding).
 */

/** A new signing secret in Standard Webhooks' form: `whsec_` and 24 random bytes in base64. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(24).toString("base64")}`;

/** `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the secret's bytes (the spec's symmetric scheme). */
function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
}

const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  PRIVATE.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  PRIVATE.addSubnet(net, prefix, "ipv6");
}

/** Whether an IP address is private, loopback, link-local, multicast or unspecified (IPv4-mapped IPv6 too). */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return PRIVATE.check(mapped[1] as string, "ipv4");
  const family = isIP(address);
  if (family === 0) return true;
  return PRIVATE.check(address, family === 4 ? "ipv4" : "ipv6");
}

/** Why a URL cannot take webhooks, or undefined when it can (resolving its name now). */
export async function urlProblem(url: string, allowPrivate: boolean): Promise<string | undefined> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "the URL is not a valid absolute URL";
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:")
    return "the URL must be http:// or https://";
  if (parsed.username || parsed.password) return "the URL must not carry a user name or password";
  if (allowPrivate) return undefined;
  const host = parsed.hostname.replace(/^\[|\]$/g, "");
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await dns.lookup(host, { all: true })).map((a) => a.address);
    } catch {
      return `the URL's host '${host}' does not resolve`;
    }
  }
  if (addresses.some(isPrivateAddress)) {
    return `the URL's host '${host}' is a private, loopback or link-local address (GATEHOUSE_WEBHOOK_ALLOW_PRIVATE_URLS)`;
  }
  return undefined;
}

/** dns.lookup, refusing a name with any private address: what a connection is made to is what was checked. */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, found: LookupAddress[]) => {
    if (err) return callback(err, "", 4);
    const blocked = found.find((a) => isPrivateAddress(a.address));
    if (blocked || found.length === 0) {
      return callback(new Error(`${hostname} resolves to a private address`), "", 4);
    }
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, found);
    const first = found[0] as LookupAddress;
    callback(null, first.address, first.family);
  });
};

export interface SendOptions {
  timeoutMs: number;
  allowPrivate: boolean;
}

export interface SendOutcome {
  /** the receiver's status, or absent when there was no answer */
  statusCode?: number;
  latencyMs: number;
  /** the start of the answer's body (at most 1 KiB) */
  response?: string;
  /** why there was no answer (timeout, refused, private address) */
  error?: string;
}

const SNIPPET_BYTES = 1024;

/**
 * Connections kept open between deliveries to one receiver. The address check runs when a connection is made
 * (`lookup`), so a kept connection was checked; the setting is the same for every request of a process.
 */
const AGENTS = {
  http: new http.Agent({ keepAlive: true, maxSockets: 16 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 16 }),
};

/** POSTs one signed delivery and reads the start of the answer; never throws. */
function send(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: SendOptions,
): Promise<SendOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return resolve({ latencyMs: 0, error: "invalid URL" });
    }
    const host = target.hostname.replace(/^\[|\]$/g, "");
    if (!options.allowPrivate && isIP(host) && isPrivateAddress(host)) {
      return resolve({ latencyMs: 0, error: `${host} is a private address` });
    }
    const client = target.protocol === "https:" ? https : http;
    const req = client.request(target, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      signal: AbortSignal.timeout(options.timeoutMs),
      ...(!options.allowPrivate && { lookup: publicOnlyLookup }),
      agent: target.protocol === "https:" ? AGENTS.https : AGENTS.http,
    });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = () => {
        res.destroy();
        resolve({
          statusCode: res.statusCode ?? 0,
          latencyMs: elapsed(),
          response: Buffer.concat(chunks).subarray(0, SNIPPET_BYTES).toString("utf8"),
        });
      };
      res.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= SNIPPET_BYTES) finish();
      });
      res.on("end", finish);
      res.on("error", finish);
    });
    req.on("error", (err: Error) => {
      const timedOut = err.name === "AbortError" || err.name === "TimeoutError";
      resolve({
        latencyMs: elapsed(),
        error: timedOut ? `no answer within ${options.timeoutMs} ms` : err.message,
      });
    });
    req.end(body);
  });
}

/** A delivery to sign and send: its id (`webhook-id`), where to, the subscription's secret and the event's body. */
export interface SignedDelivery {
  id: string;
  url: string;
  secret: string;
  body: string;
}

/** Signs each delivery at its sending (`webhook-timestamp` is now) and sends them all at once; never throws. */
export function sendSigned(deliveries: SignedDelivery[], options: SendOptions): Promise<SendOutcome[]> {
  return Promise.all(
    deliveries.map((d) => {
      const timestamp = Math.floor(Date.now() / 1000);
      const headers = {
        "webhook-id": d.id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signature(d.secret, d.id, timestamp, d.body),
        "user-agent": "Gatehouse-Webhooks",
      };
      return send(d.url, headers, d.body, options);
    }),
  );
}
