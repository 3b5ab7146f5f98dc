import path from "node:path";
import { settings } from "../lib/config.ts";
import { seededPdp } from "../lib/pdp-setup.ts";
import { judge, type Context, type Scenario } from "../lib/scenario.ts";
import { signedPercent, withInterval } from "../lib/stats.ts";
import { abRows, runAb, summarize, type LogCost } from "./pdp-decision-log.ts";

export interface PdpLogExportData {
  by_concurrency: Record<number, LogCost>;
}

/** Export files rotate at this size, one kept: a server's run stays within a few tens of MB. */
const FILE_MAX_BYTES = 32 * 1024 * 1024;

export const pdpLogExportScenario: Scenario<PdpLogExportData> = {
  name: "pdp-log-export",
  description:
    "What does exporting decisions cost the PDP? RBAC checks (decision log on) on servers exporting both logs to an " +
    "NDJSON file against servers exporting nothing, in the same interleaved A/B as pdp-decision-log.",
  async run(ctx: Context): Promise<PdpLogExportData> {
    const setup = await seededPdp(ctx);
    await setup.server.proc.stop();
    const exportDir = ctx.res.tempDir("log-export");
    let server = 0;
    const blocks = await runAb(ctx, setup, (mode) => ({
      GATEHOUSE_DECISION_LOG: "on",
      ...(mode === "on" && {
        GATEHOUSE_LOG_EXPORT_FILE: path.join(exportDir, `server-${server++}.ndjson`),
        GATEHOUSE_LOG_EXPORT_FILE_MAX_BYTES: String(FILE_MAX_BYTES),
        GATEHOUSE_LOG_EXPORT_FILE_KEEP: "1",
      }),
    }));
    const byConcurrency = Object.fromEntries(
      Object.entries(blocks).map(([concurrency, of]) => [concurrency, summarize(of)]),
    ) as Record<number, LogCost>;
    const { abPairs, abSlices, abSeconds } = settings.pdp;
    ctx.table({
      title:
        "Decision export overhead (RBAC, decision log on; servers exporting to an NDJSON file against none)",
      columns: ["conc", "export", "slices", "req/s", "p50", "p99", "event loop CPU / request"],
      rows: abRows(byConcurrency, false),
      notes: [
        `${2 * abPairs} servers over the same database, started one at a time with export on, off, off, on, and so on (each pair a block); each warmed up (${settings.warmupSeconds} s at c=16), then ${abSlices} slices of ${abSeconds} s at c=64 and at c=1.`,
        "on: GATEHOUSE_LOG_EXPORT_FILE set (both logs, a batch a second, synced); on vs off: the mean over the blocks with a 95% bootstrap interval.",
      ],
    });
    return { by_concurrency: byConcurrency };
  },
  goals(data) {
    // A loss counts against the goal when it is beyond 10% and its interval lies wholly below zero.
    const atFull = data?.by_concurrency[64];
    const loss = atFull?.throughput_extra;
    return [
      judge(
        "Exporting decisions costs the PDP at most 10% of its throughput (c=64, unless the 95% interval reaches zero)",
        loss ? loss.estimate >= -0.1 || loss.high >= 0 : undefined,
        loss
          ? `throughput ${withInterval(loss)}; event loop CPU ${signedPercent(atFull.main_cpu_extra.estimate)}`
          : "-",
      ),
    ];
  },
};
