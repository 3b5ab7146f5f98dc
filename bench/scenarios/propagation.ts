import { performance } from "node:perf_hooks";
import { settings } from "../lib/config.ts";
import { Api, latencyRow, percentile } from "../lib/http.ts";
import { BOOTSTRAP_KEY, sleep, startGatehouse, startStandalonePdp } from "../lib/procs.ts";
import { fmt } from "../lib/report.ts";
import { fail, judge, type Context, type Scenario } from "../lib/scenario.ts";
import { FACTS, SCHEMA } from "../lib/seed.ts";

export interface PropagationData {
  visible_ms: { p50: number; p90: number; p99: number; max: number };
  ack_ms: { p50: number; p99: number };
  writes: number;
  polls_per_write: number;
}

export const propagationScenario: Scenario<PropagationData> = {
  name: "propagation",
  description:
    "How soon does a write reach a standalone PDP? Time from an acknowledged write (role assignment through the API) to the change being visible in a standalone PDP " +
    "(gatehouse pdp process following the control plane's change stream), p50/p99 over 200 writes.",
  async run(ctx: Context): Promise<PropagationData> {
    const writes = settings.propagation.writes;
    const cp = await startGatehouse(ctx.res, { dataDir: ctx.res.tempDir("prop-cp"), pdp: false });
    const admin = new Api(cp.apiUrl, BOOTSTRAP_KEY);
    await admin.call("POST", `${SCHEMA}/resources`, {
      key: "document",
      name: "Document",
      actions: { read: {} },
    });
    await admin.call("POST", `${SCHEMA}/roles`, {
      key: "viewer",
      name: "Viewer",
      permissions: ["document:read"],
    });
    await admin.call("POST", `${FACTS}/bulk/tenants`, { operations: [{ key: "t0", name: "Tenant 0" }] });
    await admin.call("PUT", `${FACTS}/bulk/users`, {
      operations: Array.from({ length: writes }, (_, i) => ({ key: `w${i}` })),
    });
    const envKey = (await admin.call("GET", "/v2/api-key/default/production")).json.secret as string;
    const api = new Api(cp.apiUrl, envKey);
    const pdpProc = await startStandalonePdp(ctx.res, {
      controlPlane: cp.apiUrl,
      apiKey: envKey,
      dataDir: ctx.res.tempDir("prop-pdp"),
    });
    const pdp = new Api(pdpProc.url, envKey);
    const allowed = async (user: string) =>
      (
        await pdp.call("POST", "/allowed", {
          user: { key: user },
          action: "read",
          resource: { type: "document", tenant: "t0" },
          context: {},
        })
      ).json.allow as boolean;

    // warm both processes up
    for (let i = 0; i < 200; i++) await allowed(`w${i % writes}`);

    const visible: number[] = [];
    const acks: number[] = [];
    let polls = 0;
    for (let i = 0; i < writes; i++) {
      const user = `w${i}`;
      if (await allowed(user)) fail(`${user} is allowed before its role was assigned`);
      const sent = performance.now();
      const res = await api.call("POST", `${FACTS}/role_assignments`, { user, role: "viewer", tenant: "t0" });
      const acked = performance.now();
      if (res.status !== 200 && res.status !== 201) fail(`role assignment answered ${res.status}`);
      acks.push(acked - sent);
      for (;;) {
        polls++;
        if (await allowed(user)) break;
        if (performance.now() - acked > 10_000)
          fail(`${user}'s role did not reach the standalone PDP within 10 s`);
      }
      visible.push(performance.now() - acked);
      await sleep(20);
    }
    ctx.table({
      title: `Propagation to a standalone PDP (${writes} role assignments, one at a time)`,
      columns: ["measure", "p50", "p90", "p99", "max"],
      rows: [
        latencyRow("write acknowledged -> allowed by the PDP", visible),
        latencyRow("the write itself (POST role_assignments)", acks),
      ],
      notes: [
        `visibility is polled with /allowed right after the acknowledgement (${fmt(polls / writes, 1)} checks per write on average; one check takes a loopback round trip).`,
      ],
    });
    return {
      visible_ms: {
        p50: percentile(visible, 50),
        p90: percentile(visible, 90),
        p99: percentile(visible, 99),
        max: Math.max(...visible),
      },
      ack_ms: { p50: percentile(acks, 50), p99: percentile(acks, 99) },
      writes,
      polls_per_write: polls / writes,
    };
  },
  goals: (data) => [
    judge(
      "Propagation p99 under 50 ms",
      data && data.visible_ms.p99 < 50,
      `p99 ${fmt(data?.visible_ms.p99, 1)} ms, p50 ${fmt(data?.visible_ms.p50, 1)} ms`,
    ),
  ],
};
