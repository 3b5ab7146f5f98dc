import { test } from "node:test";
import assert from "node:assert/strict";
import { runFuzz, startFuzzTarget } from "../fuzz/fuzz.ts";

/** Seeded and bounded; `npm run fuzz` sends more (FUZZ_SEED, FUZZ_COUNT). */
const SEED = 17;
const COUNT = 3000;

test("fuzzing the write routes and the PDP ports: no 5xx, and another organization's objects are untouched", async () => {
  const target = await startFuzzTarget();
  try {
    const before = await target.control();
    const result = await runFuzz(target, SEED, COUNT);
    assert.equal(result.sent, COUNT);
    assert.deepEqual(
      result.failures,
      [],
      `seed ${SEED}: ${JSON.stringify(result.failures.slice(0, 5), null, 1)}`,
    );
    // The fuzzer's requests did reach the services: some were accepted, many refused.
    assert.ok(
      Object.keys(result.statuses).some((s) => Number(s) < 300),
      JSON.stringify(result.statuses),
    );
    assert.ok((result.statuses[422] ?? 0) > 0, JSON.stringify(result.statuses));
    assert.deepEqual(await target.control(), before);
  } finally {
    await target.close();
  }
});
