import type { FastifyInstance, InjectOptions } from "fastify";
import type { DecisionLogger } from "../../src/pdp/runtime/decision-log.ts";
import { createEmbeddedPdp, type EmbeddedPdp } from "../../src/pdp/embedded.ts";
import { databasePdpStorage } from "../../src/domain/pdp-storage.ts";
import { buildOpaApp, buildPdpApp } from "../../src/pdp/http/server.ts";
import { controlPlaneChecks } from "../../src/pdp/http/control-checks.ts";
import { PUBLIC_URL, type Reply, type TestEnv } from "./app.ts";

export interface TestPdp {
  pdp: EmbeddedPdp;
  app: FastifyInstance;
  opa: FastifyInstance;
  call(key: string | null, url: string, body: unknown, headers?: Record<string, string>): Promise<Reply>;
  opaCall(key: string, url: string, body: unknown): Promise<Reply>;
  close(): Promise<void>;
}

const toReply = (res: { statusCode: number; headers: Record<string, unknown>; body: string }): Reply => {
  let json: unknown;
  try {
    json = res.body === "" ? undefined : JSON.parse(res.body);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, body: res.body, json };
};

/** The embedded PDP over a test environment's control plane, as `gatehouse serve` wires it. */
export async function startTestPdp(
  env: TestEnv,
  options: { idleMs?: number; decisions?: DecisionLogger } = {},
): Promise<TestPdp> {
  const pdp = createEmbeddedPdp({
    storage: databasePdpStorage(env.store),
    notifier: env.app.notifier,
    publicUrl: PUBLIC_URL,
    controlPlane: () => env.app,
    ...options,
  });
  const checks = controlPlaneChecks(pdp);
  env.app.pdpSlot.current = checks;
  const app = await buildPdpApp(pdp);
  const opa = await buildOpaApp(pdp);
  const inject = async (
    target: FastifyInstance,
    key: string | null,
    url: string,
    body: unknown,
    headers = {},
  ) =>
    toReply(
      await target.inject({
        method: "POST",
        url,
        headers: { ...(key !== null && { authorization: `Bearer ${key}` }), ...headers },
        payload: body as InjectOptions["payload"],
      }),
    );
  return {
    pdp,
    app,
    opa,
    call: (key, url, body, headers) => inject(app, key, url, body, headers),
    opaCall: (key, url, body) => inject(opa, key, url, body),
    async close() {
      if (env.app.pdpSlot.current === checks) env.app.pdpSlot.current = undefined;
      await app.close();
      await opa.close();
      await pdp.close();
    },
  };
}
