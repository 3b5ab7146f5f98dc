// Listing walks against checks, in the engine: on random environments (tenant roles, derivations, condition sets
// with every operator) the pages of a walk, concatenated, hold exactly what a check on each candidate allows; a walk
// resumed after random writes (schema included) still answers its first revision, and the engine is left as it was;
// a cursor older than the journal keeps is gone; a page examines a bounded number of ids.

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  createEngine,
  type Engine,
  type EnvironmentData,
  type ListAnswer,
  type ListCursor,
  type QueryUser,
} from "../../src/pdp/engine/index.ts";
import { WORK_LIMIT } from "../../src/pdp/engine/walks.ts";
import { applyToReference, randomChanges } from "./random-changes.ts";
import { Random, randomEnvironment, randomUserAttributes, SITES, TENANTS } from "./random-environment.ts";

const SEED = Number(process.env["PDP_WALK_SEED"] ?? 20261128);
const ENVIRONMENTS = 30;

type Page<T> = (cursor: ListCursor | undefined) => ListAnswer<T>;

/** A walk's pages from `cursor` on, concatenated. */
function walkAll<T>(page: Page<T>, cursor?: ListCursor): T[] {
  const items: T[] = [];
  for (let pages = 0; ; pages++) {
    assert.ok(pages < 10_000, "a walk that never ends");
    const answer = page(cursor);
    assert.equal(answer.gone, false, "a cursor the engine should still hold");
    if (answer.gone) return items;
    items.push(...answer.items);
    if (answer.next === undefined) return items;
    cursor = answer.next;
  }
}

/** One listing question on an environment: its walk and what checks say it must hold. */
interface Question {
  name: string;
  page: (size: number) => Page<string>;
  expected: () => string[];
}

function questions(engine: Engine, data: EnvironmentData, random: Random): Question[] {
  const out: Question[] = [];
  const users: QueryUser[] = [...(data.users ?? []).map((u) => ({ key: u.key })), { key: "stranger" }];
  for (const resource of data.resources ?? []) {
    for (const action of resource.actions) {
      const context = random.chance(0.5) ? { site: random.pick(SITES) } : {};
      for (const base of users) {
        const user = random.chance(0.2) ? { ...base, attributes: randomUserAttributes(random) } : base;
        const tenant = random.chance(0.5) ? random.pick(TENANTS) : undefined;
        const query = { user, action, type: resource.key, context, ...(tenant && { tenant }) };
        out.push({
          name: `resources ${JSON.stringify(query)}`,
          page: (size) => (cursor) => {
            const answer = engine.listResources(query, { size, ...(cursor && { cursor }) });
            return answer.gone
              ? answer
              : { ...answer, items: answer.items.map((i) => `${i.key}@${i.tenant}`) };
          },
          expected: () =>
            (data.resource_instances ?? [])
              .filter((i) => i.resource === resource.key)
              .filter(
                (i) =>
                  engine.check({
                    user,
                    action,
                    resource: { type: resource.key, key: i.key, ...(tenant && { tenant }) },
                    context,
                  }).allow,
              )
              .map((i) => `${i.key}@${i.tenant}`),
        });
      }
      const instances = (data.resource_instances ?? []).filter((i) => i.resource === resource.key);
      const targets = [
        ...random.some(instances, 0.4).map((i) => ({ type: resource.key, key: i.key })),
        { type: resource.key, tenant: random.pick(TENANTS) },
      ];
      for (const target of targets) {
        const query = { action, resource: target, context };
        out.push({
          name: `subjects ${JSON.stringify(query)}`,
          page: (size) => (cursor) => engine.listSubjects(query, { size, ...(cursor && { cursor }) }),
          expected: () =>
            (data.users ?? [])
              .map((u) => u.key)
              .filter((key) => engine.check({ user: { key }, action, resource: target, context }).allow),
        });
      }
    }
  }
  return out;
}

const sorted = (items: string[]) => [...items].sort();

test("walks hold exactly what checks allow, page after page, on random environments", (t) => {
  const random = new Random(SEED);
  let pairs = 0;
  let listed = 0;
  for (let env = 0; env < ENVIRONMENTS; env++) {
    const data = randomEnvironment(random);
    const engine = createEngine(data);
    engine.markRevision(1);
    for (const q of questions(engine, data, random)) {
      const items = walkAll(q.page(1 + random.int(4)));
      assert.equal(new Set(items).size, items.length, `duplicates in ${q.name}`);
      const expected = q.expected();
      assert.deepEqual(sorted(items), sorted(expected), `PDP_WALK_SEED=${SEED} env ${env}: ${q.name}`);
      pairs++;
      listed += items.length;
    }
  }
  t.diagnostic(`${pairs} walks, ${listed} items`);
  assert.ok(listed > pairs / 4, "the generator stopped producing grants");
});

test("a walk resumed after writes answers its first revision, and leaves the engine as it was", () => {
  const random = new Random(SEED + 1);
  let resumed = 0;
  for (let env = 0; env < ENVIRONMENTS; env++) {
    let data = randomEnvironment(random);
    const engine = createEngine(data);
    engine.markRevision(1);
    const asked = random.some(questions(engine, data, random), 0.3);
    const before = asked.map((q) => sorted(q.expected()));
    // First pages at revision 1, then writes (revisions 2, 3, ...) between the following pages.
    const walks = asked.map((q) => ({
      page: q.page(2),
      items: [] as string[],
      cursor: undefined as ListCursor | undefined,
      done: false,
    }));
    let revision = 1;
    for (let round = 0; walks.some((w) => !w.done) && round < 200; round++) {
      for (const walk of walks) {
        if (walk.done) continue;
        const answer = walk.page(walk.cursor);
        assert.equal(answer.gone, false);
        if (answer.gone) continue;
        assert.equal(answer.revision, 1);
        walk.items.push(...answer.items);
        walk.cursor = answer.next;
        walk.done = answer.next === undefined;
      }
      for (const change of randomChanges(random, data)) {
        engine.apply(change);
        data = applyToReference(data, change);
      }
      engine.markRevision(++revision);
      resumed++;
    }
    walks.forEach((walk, i) => {
      assert.deepEqual(
        sorted(walk.items),
        before[i],
        `PDP_WALK_SEED=${SEED + 1} env ${env}: ${asked[i]?.name}`,
      );
    });
    // The engine answers the newest revision as a fresh engine on the same data does.
    const fresh = createEngine(data);
    fresh.markRevision(revision);
    const now = questions(engine, data, new Random(env));
    const again = questions(fresh, data, new Random(env));
    now.forEach((q, i) => {
      const items = sorted(walkAll(q.page(3)));
      assert.deepEqual(items, sorted(q.expected()), `after writes, env ${env}: ${q.name}`);
      assert.deepEqual(
        items,
        sorted(walkAll((again[i] as Question).page(3))),
        `fresh engine, env ${env}: ${q.name}`,
      );
    });
  }
  assert.ok(resumed > ENVIRONMENTS, "no walk was resumed after writes");
});

function documents(count: number, rare: (n: number) => boolean): EnvironmentData {
  return {
    resources: [{ key: "doc", actions: ["read"], roles: { reader: { permissions: ["read"] } } }],
    users: [{ key: "ann" }],
    tenants: [{ key: "t1" }],
    resource_instances: Array.from({ length: count }, (_, n) => ({
      resource: "doc",
      key: `d${n}`,
      tenant: "t1",
      attributes: { level: rare(n) ? 3 : 0 },
    })),
    condition_sets: [
      { key: "everyone", type: "userset", conditions: {} },
      {
        key: "level3",
        type: "resourceset",
        resource: "doc",
        conditions: { allOf: [{ "resource.level": { equals: 3 } }] },
      },
    ],
    condition_set_rules: [{ user_set: "everyone", permission: "doc:read", resource_set: "level3" }],
  };
}

test("a cursor older than the journal keeps is gone; the newest revision is never gone", () => {
  const engine = createEngine(documents(50, (n) => n % 2 === 0));
  engine.keepHistory(20);
  engine.markRevision(1);
  const query = { user: { key: "ann" }, action: "read", type: "doc" };
  const first = engine.listResources(query, { size: 5 });
  assert.ok(!first.gone && first.next !== undefined);
  for (let n = 0; n < 30; n++) {
    engine.apply({
      kind: "resource_instance",
      op: "upsert",
      data: { resource: "doc", key: `d${n}`, tenant: "t1" },
    });
    engine.markRevision(2 + n);
  }
  if (first.gone || first.next === undefined) return;
  assert.deepEqual(engine.listResources(query, { size: 5, cursor: first.next }), { gone: true });
  const newest = engine.listResources(query, { size: 5 });
  assert.equal(newest.gone, false);
  // A cursor from a revision the engine has not reached is gone as well (another PDP's, or a forged one).
  assert.deepEqual(
    engine.listResources(query, { size: 5, cursor: { revision: 99, after: -1, scan: false } }),
    {
      gone: true,
    },
  );
});

test("a page examines a bounded number of ids: a sparse walk gives short pages that continue", () => {
  const count = WORK_LIMIT * 3 + 7;
  const engine = createEngine(documents(count, (n) => n % WORK_LIMIT === 5));
  engine.markRevision(1);
  const query = { user: { key: "ann" }, action: "read", type: "doc" };
  const sizes: number[] = [];
  let cursor: ListCursor | undefined;
  const keys: string[] = [];
  do {
    const answer = engine.listResources(query, { size: 100, ...(cursor && { cursor }) });
    assert.ok(!answer.gone);
    if (answer.gone) break;
    sizes.push(answer.items.length);
    keys.push(...answer.items.map((i) => i.key));
    cursor = answer.next;
  } while (cursor !== undefined);
  assert.deepEqual(
    keys,
    ["d5", `d${WORK_LIMIT + 5}`, `d${2 * WORK_LIMIT + 5}`, `d${3 * WORK_LIMIT + 5}`].slice(0, 4),
  );
  assert.ok(sizes.length >= 4, `pages ${JSON.stringify(sizes)}`);
  assert.ok(
    sizes.every((s) => s <= 1),
    `pages ${JSON.stringify(sizes)}`,
  );
});
