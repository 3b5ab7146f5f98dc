import assert from "node:assert/strict";
import http from "node:http";
import type { ServerProcess } from "./process.ts";

/*
 * What the log export and tracing end-to-end tests share: a receiver on a real port that keeps what it is sent
 * and can go away and come back, and the calls that make API log records and decisions on a running server.
 */

export interface Received {
  path: string;
  contentType: string;
  body: string;
}

/** A node:http receiver on `port` (answering 200) that keeps every request; `stop` closes it and its connections. */
export function receiver(port: number) {
  const received: Received[] = [];
  let server: http.Server | undefined;
  return {
    received,
    start: () =>
      new Promise<void>((resolve, reject) => {
        server = http.createServer((req, res) => {
          const chunks: Buffer[] = [];
          req.on("data", (d: Buffer) => chunks.push(d));
          req.on("end", () => {
            const body = Buffer.concat(chunks).toString("utf8");
            received.push({ path: req.url ?? "", contentType: String(req.headers["content-type"]), body });
            res.writeHead(200, { "content-type": "application/json" }).end("{}");
          });
        });
        server.once("error", reject);
        server.listen(port, "127.0.0.1", () => resolve());
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (!server) return resolve();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function until(what: () => boolean | Promise<boolean>, message: string, ms = 60_000) {
  const deadline = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > deadline) assert.fail(message);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A call to the control plane with `key`; the parsed answer, which must be a success. */
export async function api(server: ServerProcess, key: string, method: string, url: string, body?: unknown) {
  const res = await fetch(`${server.baseUrl}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${url} -> ${res.status} ${text}`);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return (text ? JSON.parse(text) : undefined) as any;
}

/**
 * In project `default`, environment `production`: documents, readers, and the users `keys` readers (with `email`
 * as their e-mail); returns a read key of the environment.
 */
export async function seedReaders(server: ServerProcess, key: string, users: string[], email: string) {
  const base = "/v2/schema/default/production";
  await api(server, key, "POST", `${base}/resources`, {
    key: "document",
    name: "Document",
    actions: { read: {} },
  });
  await api(server, key, "POST", `${base}/roles`, {
    key: "reader",
    name: "Reader",
    permissions: ["document:read"],
  });
  for (const user of users) {
    await api(server, key, "POST", "/v2/facts/default/production/users", {
      key: user,
      email,
      role_assignments: [{ role: "reader", tenant: "default" }],
    });
  }
  const project = await api(server, key, "GET", "/v2/projects/default");
  const envs = (await api(server, key, "GET", "/v2/projects/default/envs")) as { id: string; key: string }[];
  const created = await api(server, key, "POST", "/v2/api-key", {
    object_type: "env",
    project_id: project.id,
    environment_id: envs.find((e) => e.key === "production")?.id,
    access_level: "read",
  });
  return created.secret as string;
}

/** A check on the embedded PDP: whether `user` may `action` a document. */
export async function check(
  pdpBase: string,
  secret: string,
  user: string,
  action = "read",
): Promise<boolean> {
  const res = await fetch(`${pdpBase}/allowed`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({ user: { key: user }, action, resource: { type: "document" } }),
  });
  const body = (await res.json()) as { allow?: boolean };
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.allow === true;
}
