import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openDecisionSpool, type DecisionSpoolOptions } from "../../src/pdp/runtime/decision-spool.ts";
import type { DecisionLogChunk } from "../../src/pdp/storage.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: () => boolean, message: string): Promise<void> {
  for (const deadline = Date.now() + 10_000; !what(); await sleep(5))
    assert.ok(Date.now() < deadline, message);
}

const chunk = (text: string, count: number, pdpId = "pdp-1"): DecisionLogChunk => ({
  environmentId: "env",
  pdpId,
  entries: Buffer.from(text),
  count,
  firstId: "a",
  lastId: "b",
});

/** A spool in a fresh folder whose control plane answers while `up.now`, and refuses entries that say "bad". */
function harness(
  options: Partial<DecisionSpoolOptions> = {},
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "spool-")),
) {
  const up = { now: false };
  const shipped: [string, string | undefined][] = [];
  const logs: string[] = [];
  const spool = openDecisionSpool({
    dir,
    maxBytes: 1_000_000,
    async ship(entries, pdpId) {
      if (Buffer.from(entries).toString().includes("bad")) throw new Error("refused");
      if (!up.now) throw new Error("ECONNREFUSED");
      shipped.push([Buffer.from(entries).toString(), pdpId]);
    },
    refused: (e) => (e as Error).message === "refused",
    log: (m) => void logs.push(m),
    ...options,
  });
  return { dir, up, shipped, logs, spool };
}

test("decision spool: while the control plane is away chunks go to files, then ship oldest first, new ones behind them", async () => {
  const { dir, up, shipped, spool } = harness();
  // The PDP passes `accept` on alone, as the decision logger's sink.
  const { accept } = spool;
  try {
    await accept(chunk("[1]", 1));
    await accept(chunk("[2,2]", 2, "pdp/2"));
    assert.deepEqual(fs.readdirSync(dir).sort(), [
      "000000000001-1-pdp-1.json",
      "000000000002-2-pdp%2F2.json",
    ]);
    assert.equal(fs.readFileSync(path.join(dir, "000000000002-2-pdp%2F2.json"), "utf8"), "[2,2]");
    const { oldestAt, ...counts } = spool.stats;
    assert.deepEqual(counts, {
      spooled: 3,
      dropped: 0,
      shipped: 0,
      failures: 2,
      pendingEntries: 3,
      pendingBytes: 8,
    });
    assert.ok(oldestAt !== undefined && Date.now() - oldestAt < 60_000, "the oldest file's time");
    up.now = true;
    // Files wait: a new chunk goes behind them, even with the control plane back.
    await spool.accept(chunk("[3]", 1));
    spool.wake();
    await until(() => spool.stats.pendingEntries === 0, "the files were never shipped");
    assert.deepEqual(shipped, [
      ["[1]", "pdp-1"],
      ["[2,2]", "pdp/2"],
      ["[3]", "pdp-1"],
    ]);
    assert.deepEqual(fs.readdirSync(dir), []);
    await spool.accept(chunk("[4]", 1));
    assert.deepEqual(shipped.at(-1), ["[4]", "pdp-1"], "no file waits: shipped at once");
    assert.equal(spool.stats.spooled, 4);
    assert.equal(spool.stats.shipped, 5);
  } finally {
    await spool.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("decision spool: a restart ships what the last run left, removes a write a crash cut short, drops what is refused", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "spool-"));
  fs.writeFileSync(path.join(dir, "000000000007-2-pdp-old.json"), "[7,7]");
  fs.writeFileSync(path.join(dir, "000000000003-1.json"), "[3]"); // an older version's name: no PDP
  fs.writeFileSync(path.join(dir, "000000000005-4-pdp-old.json"), "bad");
  fs.writeFileSync(path.join(dir, "000000000009-1-pdp-old.json.tmp"), "[9");
  const { up, shipped, logs, spool } = harness({}, dir);
  try {
    assert.deepEqual(spool.stats.pendingEntries, 7);
    assert.ok(!fs.readdirSync(dir).some((f) => f.endsWith(".tmp")), "the cut write is gone, never counted");
    up.now = true;
    spool.wake();
    await until(() => spool.stats.pendingEntries === 0, "the files were never shipped");
    assert.deepEqual(shipped, [
      ["[3]", undefined],
      ["[7,7]", "pdp-old"],
    ]);
    assert.equal(spool.stats.dropped, 4);
    assert.match(logs.join("\n"), /dropped 4 entries \(the control plane refused them/);
    // New files continue the sequence.
    up.now = false;
    await spool.accept(chunk("[10]", 1));
    assert.deepEqual(fs.readdirSync(dir), ["000000000008-1-pdp-1.json"]);
  } finally {
    await spool.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("decision spool: past its bound in bytes the oldest files go, counted; a chunk larger than the bound is dropped", async () => {
  const { dir, spool, logs } = harness({ maxBytes: 10 });
  try {
    for (const text of ["[1,1]", "[2,2]", "[3,3]"]) await spool.accept(chunk(text, 2));
    assert.deepEqual(
      fs.readdirSync(dir).map((f) => fs.readFileSync(path.join(dir, f), "utf8")),
      ["[2,2]", "[3,3]"],
    );
    assert.equal(spool.stats.dropped, 2);
    assert.equal(spool.stats.pendingBytes, 10);
    await spool.accept(chunk("[4,4,4,4,4]", 5));
    assert.equal(spool.stats.dropped, 7);
    assert.match(logs.join("\n"), /holds at most 10 bytes/);
  } finally {
    await spool.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
