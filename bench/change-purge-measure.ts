/**
 * The change feed's retention purge on a feed of a million changes (1,000 batch rows of 1,000 role assignments,
 * about 175 MB of JSON, 10 rows per revision, all a month old): how long it takes and the longest the event loop
 * waited meanwhile (monitorEventLoopDelay, 5 ms resolution), after a full GC so the setup's garbage is not counted.
 * Usage: node --expose-gc --import tsx bench/change-purge-measure.ts sqlite|postgres [batchRows]
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { Dialect } from "../src/db/store.ts";
import { purgeChanges } from "../src/changes/retention.ts";
import { toTimestamp } from "../src/lib/time.ts";
import { openBenchStore } from "./lib/store.ts";
import { Resources } from "./lib/procs.ts";

const dialect = (process.argv[2] ?? "sqlite") as Dialect;
const batch = process.argv[3] === undefined ? undefined : Number(process.argv[3]);
const REVISIONS = 100;
const ROWS_PER_REVISION = 10;

const res = new Resources();
try {
  const { store, environmentId } = await openBenchStore(res, dialect);
  try {
    const old = toTimestamp(new Date(Date.now() - 30 * 86_400_000));
    const item = (i: number) => ({
      kind: "role_assignment",
      op: "upsert",
      data: {
        user: `user-${i}`,
        role: "reader",
        tenant: "default",
        resource_instance: null,
        id: crypto.randomUUID(),
      },
    });
    const { revision } = await store.db
      .selectFrom("environments")
      .select("revision")
      .where("id", "=", environmentId)
      .executeTakeFirstOrThrow();
    let at = Number(revision);
    for (let r = 0; r < REVISIONS; r++) {
      at++;
      const rows = Array.from({ length: ROWS_PER_REVISION }, (_, seq) => ({
        environment_id: environmentId,
        revision: at,
        seq,
        kind: "batch",
        op: "apply",
        created_at: old,
        data: JSON.stringify(
          Array.from({ length: 1000 }, (_, i) => item((r * ROWS_PER_REVISION + seq) * 1000 + i)),
        ),
      }));
      await store.db.insertInto("changes").values(rows).execute();
    }
    await store.db
      .updateTable("environments")
      .set({ revision: at })
      .where("id", "=", environmentId)
      .execute();
    (globalThis as { gc?: () => void }).gc?.();
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const start = performance.now();
    const deleted = await purgeChanges(store.db, { days: 7, minRevisions: 0 }, Date.now(), batch);
    const ms = performance.now() - start;
    delay.disable();
    console.log(
      `${dialect}: purged ${deleted} rows in ${ms.toFixed(0)} ms; event loop delay max ` +
        `${(delay.max / 1e6).toFixed(1)} ms, mean ${(delay.mean / 1e6).toFixed(1)} ms`,
    );
  } finally {
    await store.close();
  }
} finally {
  await res.close();
}
