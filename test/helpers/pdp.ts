import type { FastifyInstance } from "fastify";
import type { DecisionLogger } from "../../src/pdp/runtime/decision-log.ts";
import { createEmbeddedPdp, type EmbeddedPdp } from "../../src/pdp/embedded.ts";
import { databasePdpStorage } from "../../src/domain/pdp-storage.ts";
import { buildOpaApp, buildPdpApp } from "../../src/pdp/http/server.ts";
import { embeddedDecisions } from "../../src/pdp/http/embedded-decisions.ts";
import type { StandaloneOptions } from "../../src/pdp/standalone.ts";
import { PUBLIC_URL, type Reply, type TestEnv } from "./app.ts";

export interface TestPdp {
  pdp: EmbeddedPdp;
  app: FastifyInstance;
  opa: FastifyInstance;
  /** Both ports listen on 127.0.0.1 (a free port each): checks go over real HTTP, as clients send them. */
  url: string;
  opaUrl: string;
  call(key: string | null, url: string, body: unknown, headers?: Record<string, string>): Promise<Reply>;
  opaCall(key: string, url: string, body: unknown): Promise<Reply>;
  close(): Promise<void>;
}

async function listening(app: FastifyInstance): Promise<string> {
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  return `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
}

/** A POST of `body` as JSON (a string or Buffer as it is) over HTTP, with Content-Length. */
export async function post(
  url: string,
  key: string | null,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(key !== null && { authorization: `Bearer ${key}` }),
      ...headers,
    },
    body:
      typeof body === "string" ? body : Buffer.isBuffer(body) ? new Uint8Array(body) : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: Object.fromEntries(res.headers), body: text, json };
}

/** The embedded PDP over a test environment's control plane, as `gatehouse serve` wires it. */
export async function startTestPdp(
  env: TestEnv,
  options: { idleMs?: number; decisions?: DecisionLogger; listingHistory?: number } = {},
): Promise<TestPdp> {
  const pdp = createEmbeddedPdp({
    storage: databasePdpStorage(env.store, (keyId) => env.app.keyUse.used(keyId)),
    notifier: env.app.notifier,
    publicUrl: PUBLIC_URL,
    controlPlane: () => env.app,
    ...options,
  });
  const checks = embeddedDecisions(pdp);
  env.app.pdpSlot.current = checks;
  const app = await buildPdpApp(pdp);
  const opa = await buildOpaApp(pdp);
  const url = await listening(app);
  const opaUrl = await listening(opa);
  return {
    pdp,
    app,
    opa,
    url,
    opaUrl,
    call: (key, path, body, headers) => post(url + path, key, body, headers),
    opaCall: (key, path, body) => post(opaUrl + path, key, body),
    async close() {
      if (env.app.pdpSlot.current === checks) env.app.pdpSlot.current = undefined;
      await app.close();
      await opa.close();
      await pdp.close();
    },
  };
}

/**
 * A standalone PDP's options for a test: on free ports of 127.0.0.1, quiet (warnings only, into `logs`), no decision
 * log, and a one-second long poll; `overrides` adds or replaces any.
 */
export function standaloneTestOptions(
  controlPlaneUrl: string,
  apiKey: string,
  dataDir: string,
  logs: string[],
  overrides: Partial<StandaloneOptions> = {},
): StandaloneOptions {
  return {
    controlPlaneUrl,
    apiKey,
    host: "127.0.0.1",
    pdpPort: 0,
    opaPort: 0,
    dataDir,
    logLevel: "warn",
    decisionLog: false,
    pollWaitSeconds: 1,
    log: (m) => logs.push(m),
    ...overrides,
  };
}
