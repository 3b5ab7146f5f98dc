import { test } from "node:test";
import assert from "node:assert/strict";
import { createBatcher, type BatcherOptions, type BatchFailure } from "../../src/lib/batcher.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: () => boolean, message: string, ms = 5000): Promise<void> {
  for (const deadline = Date.now() + ms; !what(); await sleep(2)) assert.ok(Date.now() < deadline, message);
}

/** A batcher over numbers whose sink keeps the batches it took; `fail` decides, per call, whether it throws. */
function recorder(
  options: Partial<BatcherOptions<number>> = {},
  fail: (call: number) => unknown = () => null,
) {
  const sent: number[][] = [];
  const failures: BatchFailure<number>[] = [];
  let calls = 0;
  const batcher = createBatcher<number>({
    send: async (batch) => {
      const error = fail(calls++);
      if (error) throw error;
      sent.push(batch);
    },
    flushIntervalMs: 60_000,
    batchSize: 100,
    maxQueue: 1000,
    dropWhenFull: "newest",
    onFailure: (f) => void failures.push(f),
    ...options,
  });
  return { batcher, sent, failures, calls: () => calls };
}

/** A sink that holds each batch until `release()`, then keeps it in `sent`. */
function holdingSink<T>() {
  const sink = { sent: [] as T[][], release: () => {} };
  const send = async (batch: T[]) => {
    await new Promise<void>((resolve) => (sink.release = resolve));
    sink.sent.push(batch);
  };
  return Object.assign(sink, { send });
}

/** Batches of staged entries, one per send, as the decision log keeps its open chunks beside the batcher. */
function staging(options: Pick<BatcherOptions<number[]>, "send" | "flushIntervalMs" | "maxQueue">) {
  const staged: number[] = [];
  const batcher = createBatcher<number[]>({
    ...options,
    batchSize: 1,
    weight: (items) => items.length,
    dropWhenFull: "oldest",
    staged: {
      count: () => staged.length,
      seal: () => staged.length > 0 && batcher.add(staged.splice(0)),
    },
  });
  return { batcher, staged };
}

test("batcher: a whole batch is sent at once, after the caller's turn and without the timer; a part of one waits", async () => {
  const { batcher, sent } = recorder({ batchSize: 3 });
  for (const n of [1, 2, 3]) batcher.add(n);
  assert.deepEqual(sent, [], "not inside the caller's turn");
  await until(() => sent.length > 0, "a full batch waited for the timer (60 s)");
  assert.deepEqual(sent, [[1, 2, 3]]);
  batcher.add(4);
  batcher.add(5);
  await sleep(30);
  assert.deepEqual(sent, [[1, 2, 3]], "two of three wait for the timer");
  assert.equal(batcher.queued, 2);
  await batcher.close();
  assert.deepEqual(sent, [
    [1, 2, 3],
    [4, 5],
  ]);
  assert.equal(batcher.queued, 0);
});

test("batcher: the timer sends what waits, in batches of batchSize, oldest first", async () => {
  const { batcher, sent } = recorder({ flushIntervalMs: 20, batchSize: 4 });
  for (let n = 0; n < 3; n++) batcher.add(n);
  await sleep(5);
  assert.equal(sent.length, 0, "not before the timer");
  await until(() => sent.length > 0, "the timer never sent");
  assert.deepEqual(sent, [[0, 1, 2]]);
  // More than a batch at once: the first goes at once, the rest with the timer (or the next whole batch).
  for (let n = 3; n < 13; n++) batcher.add(n);
  await until(() => sent.flat().length === 13, "the rest was never sent");
  assert.ok(sent.every((batch) => batch.length <= 4));
  assert.deepEqual(
    sent.flat(),
    Array.from({ length: 13 }, (_, n) => n),
  );
  await batcher.close();
});

test("batcher: past the bound, `newest` refuses what comes and counts it; what it holds is sent", async () => {
  const overflows: number[] = [];
  const { batcher, sent } = recorder({ maxQueue: 3, onOverflow: (w) => void overflows.push(w) });
  for (let n = 0; n < 5; n++) batcher.add(n);
  assert.equal(batcher.queued, 3);
  assert.equal(batcher.dropped, 2);
  assert.deepEqual(overflows, [1, 1]);
  await batcher.flush();
  assert.deepEqual(sent, [[0, 1, 2]]);
  batcher.add(5);
  await batcher.close();
  assert.deepEqual(sent.flat(), [0, 1, 2, 5], "room again once sent");
});

test("batcher: past the bound, `oldest` drops the oldest waiting items by weight, never the batch in flight", async () => {
  const sink = holdingSink<number>();
  const { sent } = sink;
  const batcher = createBatcher<number>({
    send: sink.send,
    flushIntervalMs: 60_000,
    batchSize: 1,
    maxQueue: 10,
    weight: (n) => n,
    dropWhenFull: "oldest",
  });
  batcher.add(4);
  const flushing = batcher.flush();
  await sleep(1); // 4 is in flight
  batcher.add(3);
  batcher.add(2);
  assert.equal(batcher.queued, 9);
  batcher.add(3); // 12 > 10: 3, the oldest waiting, goes; 4 in flight stays
  assert.equal(batcher.dropped, 3);
  assert.equal(batcher.queued, 9);
  for (let i = 0; i < 10 && batcher.queued > 0; i++) {
    sink.release();
    await sleep(1);
  }
  await flushing;
  sink.release();
  await batcher.close();
  assert.deepEqual(sent.flat(), [4, 2, 3]);
});

test("batcher: staged items count against the bound; reserve seals them to drop the oldest, or refuses", async () => {
  const sent: number[] = [];
  const { batcher, staged } = staging({
    send: async ([batch]) => void sent.push(...(batch ?? [])),
    flushIntervalMs: 60_000,
    maxQueue: 4,
  });
  const record = (n: number) => batcher.reserve(1) && void staged.push(n);
  for (let n = 0; n < 6; n++) record(n);
  // At the fifth, the four staged were sealed into one item and dropped: the newest are kept.
  assert.equal(batcher.dropped, 4);
  assert.equal(batcher.queued, 2);
  await batcher.flush();
  assert.deepEqual(sent, [4, 5], "flush seals what is staged");
  const refusing = createBatcher<number>({
    send: async () => {},
    flushIntervalMs: 60_000,
    batchSize: 1,
    maxQueue: 2,
    dropWhenFull: "newest",
  });
  assert.equal(refusing.reserve(2), true);
  assert.equal(refusing.reserve(3), false);
  assert.equal(refusing.dropped, 3);
  await refusing.close();
  await batcher.close();
});

test("batcher: a failed batch stays at the front and is retried, backing off; the ones after it wait", async () => {
  const { batcher, sent, failures } = recorder({ flushIntervalMs: 10, batchSize: 2 }, (call) =>
    call < 2 ? new Error("down") : null,
  );
  for (let n = 0; n < 5; n++) batcher.add(n);
  await until(() => sent.flat().length === 5, "never delivered once the sink came back");
  assert.deepEqual(sent, [[0, 1], [2, 3], [4]], "in order, the failed batch first");
  assert.deepEqual(
    failures.map((f) => [f.attempts, f.retryable, f.gaveUp, f.retryInMs, f.batch]),
    [
      [1, false, false, 20, [0, 1]],
      [2, false, false, 40, [0, 1]],
    ],
  );
  assert.equal(batcher.dropped, 0);
  await batcher.close();
});

test("batcher: after maxAttempts failures in a row a batch is given up and counted; the next goes on", async () => {
  const { batcher, sent, failures } = recorder({ maxAttempts: 3, batchSize: 2 }, (call) =>
    call < 3 ? new Error("bad batch") : null,
  );
  for (const n of [1, 2, 3]) batcher.add(n);
  await until(() => failures.length === 1, "the whole batch [1, 2] was not sent at once");
  await batcher.flush();
  assert.equal(batcher.dropped, 0, "one try per flush");
  assert.deepEqual(sent, []);
  await batcher.flush();
  assert.deepEqual(
    failures.map((f) => [f.batch, f.attempts, f.gaveUp]),
    [
      [[1, 2], 1, false],
      [[1, 2], 2, false],
      [[1, 2], 3, true],
    ],
  );
  assert.equal(batcher.dropped, 2);
  assert.deepEqual(sent, [[3]], "the batch after it is sent in the same flush");
  await batcher.close();
});

test("batcher: a retryable failure (the sink is away) is waited out however long; only shutdown gives it up", async () => {
  const away = new Error("away");
  let up = false;
  const { batcher, sent, failures } = recorder(
    { maxAttempts: 3, retryable: (e) => e === away, flushIntervalMs: 5, retryableDelayMs: 5 },
    () => (up ? null : away),
  );
  batcher.add(1);
  for (let i = 0; i < 10; i++) await batcher.flush();
  await until(() => failures.length > 15, "the timer did not retry");
  assert.equal(batcher.dropped, 0);
  assert.ok(failures.every((f) => f.retryable && f.attempts === 0 && !f.gaveUp && f.retryInMs === 5));
  up = true;
  await until(() => sent.length === 1, "not sent once the sink was back");
  up = false;
  batcher.add(2);
  const closing = Date.now();
  await batcher.close();
  assert.equal(batcher.dropped, 1, "at shutdown an absent sink counts, and is given up");
  assert.deepEqual(
    failures.slice(-3).map((f) => [f.attempts, f.gaveUp]),
    [
      [1, false],
      [2, false],
      [3, true],
    ],
  );
  assert.ok(Date.now() - closing < 2000);
  assert.deepEqual(sent, [[1]]);
});

test("batcher: close sends everything, retrying a failure within it, and what is added meanwhile", async () => {
  const { batcher, sent, failures } = recorder({ batchSize: 2, flushIntervalMs: 1 }, (call) =>
    call === 0 ? new Error("once") : null,
  );
  for (let n = 0; n < 3; n++) batcher.add(n);
  const closing = batcher.close();
  batcher.add(3);
  await closing;
  assert.deepEqual(sent.flat(), [0, 1, 2, 3]);
  assert.equal(failures.length, 1);
  assert.equal(batcher.queued, 0);
});

test("batcher: a flush covers what was added before it, and waits for the send under way", async () => {
  const sink = holdingSink<number>();
  const { sent } = sink;
  const batcher = createBatcher<number>({
    send: sink.send,
    flushIntervalMs: 60_000,
    batchSize: 10,
    maxQueue: 100,
    dropWhenFull: "newest",
  });
  batcher.add(1);
  const first = batcher.flush();
  await sleep(1);
  batcher.add(2);
  const second = batcher.flush();
  sink.release();
  await first;
  assert.deepEqual(sent, [[1]], "2 came after the first flush began");
  await sleep(1);
  sink.release();
  await second;
  assert.deepEqual(sent, [[1], [2]]);
  await batcher.close();
});

test("batcher: a tick that finds a send under way has the next send seal what is staged, so a busy sink starves nothing", async () => {
  const sink = holdingSink<number[]>();
  const sent = () => sink.sent.map(([items]) => items);
  const { batcher, staged } = staging({ send: sink.send, flushIntervalMs: 10, maxQueue: 100 });
  batcher.add([1]); // a whole batch: its send starts, and the sink holds it
  await sleep(1);
  staged.push(2); // a quiet source's partial chunk
  await sleep(50); // ticks find the send under way
  batcher.add([3]);
  sink.release();
  await until(() => sent().length === 1 && staged.length === 0, "the partial chunk was never sealed");
  for (let i = 0; i < 10 && sent().length < 3; i++) {
    sink.release();
    await sleep(2);
  }
  assert.deepEqual(sent(), [[1], [3], [2]]);
  await batcher.close();
});
