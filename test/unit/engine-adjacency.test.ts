import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AdjacencyLists } from "../../src/pdp/engine/adjacency.ts";

/** A seeded generator, so that a failure replays. */
function rng(seed: number) {
  let state = seed >>> 0;
  return (below: number) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state % below;
  };
}

const recordsOf = (lists: AdjacencyLists, node: number) => {
  const out: string[] = [];
  const { data, stride } = lists;
  for (let i = lists.begin(node); i < lists.end(node); i += stride) {
    out.push([...data.subarray(i, i + stride)].join(","));
  }
  return out.sort();
};

describe("AdjacencyLists (the engine's pooled per-node lists)", () => {
  for (const stride of [2, 3]) {
    test(`stride ${stride}: random appends and removals agree with plain arrays, through growth, compaction and trim`, () => {
      const random = rng(stride * 7919);
      const lists = new AdjacencyLists(stride);
      const model = new Map<number, string[]>();
      const nodes = 300;
      for (let step = 0; step < 40_000; step++) {
        // a few wide nodes, many narrow ones: blocks move, leave holes, and the pool compacts
        const node = random(10) === 0 ? random(5) : random(nodes);
        const records = model.get(node) ?? [];
        const op = random(10);
        if (op < 6 || records.length === 0) {
          const record = [random(1000), random(50), random(20)].slice(0, stride);
          lists.append(node, record[0] as number, record[1] as number, record[2]);
          records.push(record.join(","));
        } else if (op < 9) {
          const victim = (records[random(records.length)] as string).split(",").map(Number);
          const at = lists.find(node, victim[0] as number, victim[1] as number);
          assert.ok(at >= 0);
          const found = [...lists.data.subarray(at, at + stride)].join(",");
          lists.removeAt(node, at);
          records.splice(records.indexOf(found), 1);
        } else if (random(4) === 0) {
          lists.clear(node);
          records.length = 0;
        } else {
          const a = random(1000);
          lists.removeWhere(node, (data, i) => (data[i] as number) % 3 === a % 3);
          const kept = records.filter((r) => Number(r.split(",")[0]) % 3 !== a % 3);
          records.length = 0;
          records.push(...kept);
        }
        model.set(node, records);
        if (step % 10_000 === 9_999) lists.trim();
        if (step % 997 === 0) {
          for (const [n, expected] of model) assert.deepEqual(recordsOf(lists, n), [...expected].sort());
        }
      }
      for (const [n, expected] of model) {
        assert.deepEqual(recordsOf(lists, n), [...expected].sort());
        assert.equal(lists.count(n), expected.length);
        assert.deepEqual([...lists.slots(n)].length, expected.length * stride);
      }
      assert.equal(lists.count(10_000), 0, "a node never written has no records");
      assert.equal(lists.find(10_000, 1, 2), -1);
    });
  }

  test("a bulk load keeps no slack after trim: 1M single-record lists take 12 bytes of pool each", () => {
    const lists = new AdjacencyLists(3);
    for (let node = 0; node < 1_000_000; node++) lists.append(node, node, 1, 2);
    lists.trim();
    assert.ok(lists.data.length <= 3_000_000 * 1.07, `pool of ${lists.data.length} slots`);
    assert.deepEqual([...lists.slots(999_999)], [999_999, 1, 2]);
  });
});
