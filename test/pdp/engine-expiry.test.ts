import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createEngine, type Decision, type EnvironmentData } from "../../src/pdp/engine/index.ts";

// A clock the test moves by hand: decisions before and after an instant, without sleeping.
function manualClock(start: number) {
  let now = start;
  return {
    clock: () => now,
    set: (at: number) => {
      now = at;
    },
  };
}

const T0 = Date.parse("2030-01-01T00:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString().replace("Z", "+00:00");
const EXPIRY = iso(T0 + 60_000);

const data = (): EnvironmentData => ({
  resources: [
    { key: "folder", actions: ["read"], roles: { viewer: { permissions: ["read"] } } },
    {
      key: "document",
      actions: ["read", "write"],
      relations: { parent: "folder" },
      roles: {
        viewer: {
          permissions: ["read"],
          granted_to: {
            users_with_role: [{ role: "viewer", on_resource: "folder", linked_by_relation: "parent" }],
          },
        },
      },
    },
  ],
  roles: [
    { key: "reader", permissions: ["document:read"] },
    { key: "writer", permissions: ["document:read", "document:write"] },
  ],
  users: [{ key: "alice" }, { key: "bob" }, { key: "carol" }],
  tenants: [{ key: "t1" }, { key: "t2" }],
  resource_instances: [
    { resource: "folder", key: "f1", tenant: "t1" },
    { resource: "document", key: "d1", tenant: "t1" },
  ],
  relationship_tuples: [{ subject: "folder:f1", relation: "parent", object: "document:d1", tenant: "t1" }],
  role_assignments: [
    { user: "alice", role: "writer", tenant: "t1", expires_at: EXPIRY },
    { user: "alice", role: "reader", tenant: "t2" },
    { user: "bob", role: "viewer", tenant: "t1", resource_instance: "folder:f1", expires_at: EXPIRY },
    { user: "carol", role: "reader", tenant: "t1" },
  ],
});

const onType = (user: string, action: string, tenant: string) => ({
  user: { key: user },
  action,
  resource: { type: "document", tenant },
});
const onDoc = (user: string, action: string) => ({
  user: { key: user },
  action,
  resource: { type: "document", key: "d1" },
});

function denyOf(d: Decision) {
  assert.equal(d.allow, false, JSON.stringify(d.reason));
  assert.equal(d.reason.kind, "deny");
  if (d.reason.kind !== "deny") throw new Error("unreachable");
  return d.reason;
}

describe("role assignment expiry", () => {
  test("a tenant role grants until its instant and not from it on; the deny names the expired grant", () => {
    const t = manualClock(T0);
    const engine = createEngine(data(), t);
    assert.deepEqual(engine.check(onType("alice", "write", "t1")), {
      allow: true,
      reason: { kind: "rbac", role: "writer", tenant: "t1" },
    });
    t.set(T0 + 59_999);
    assert.equal(engine.check(onType("alice", "write", "t1")).allow, true);
    t.set(T0 + 60_000);
    const reason = denyOf(engine.check(onType("alice", "write", "t1")));
    assert.equal(reason.code, "NO_ROLE_IN_TENANT");
    assert.deepEqual(reason.expired, [{ role: "writer", tenant: "t1", expired_at: EXPIRY }]);
    assert.match(reason.message, /role writer in tenant 't1' expired at 2030-01-01T00:01:00\.000\+00:00/);
    // Her permanent role elsewhere still grants, and others are untouched.
    assert.equal(engine.check(onType("alice", "read", "t2")).allow, true);
    assert.equal(engine.check(onType("carol", "read", "t1")).allow, true);
  });

  test("an instance role stops granting, directly and through derivations; the deny names it", () => {
    const t = manualClock(T0);
    const engine = createEngine(data(), t);
    const derived = engine.check(onDoc("bob", "read"));
    assert.equal(derived.allow, true);
    assert.equal(derived.reason.kind, "rebac");
    t.set(T0 + 120_000);
    const reason = denyOf(engine.check(onDoc("bob", "read")));
    assert.deepEqual(reason.expired, [
      { role: "viewer", tenant: "t1", resource_instance: "folder:f1", expired_at: EXPIRY },
    ]);
    assert.match(reason.message, /role viewer on folder:f1 expired at /);
    // A deny the expired grant would not have turned into an allow carries no note.
    const unrelated = denyOf(engine.check(onDoc("bob", "write")));
    assert.equal(unrelated.expired, undefined);
    assert.doesNotMatch(unrelated.message, /expired/);
  });

  test("listings drop expired grants at the instant", () => {
    const t = manualClock(T0);
    const engine = createEngine(data(), t);
    // d1 is in t1, where alice's expiring tenant role grants on it.
    assert.deepEqual(Object.keys(engine.userPermissions({ user: { key: "alice" } })), [
      "__tenant:t1",
      "__tenant:t2",
      "document:d1",
    ]);
    assert.deepEqual(
      engine.userTenants("bob").map((x) => x.key),
      ["t1"],
    );
    assert.deepEqual(
      Object.keys(
        engine.authorizedUsers({ action: "read", resource: { type: "document", key: "d1" } }).users,
      ),
      ["alice", "bob", "carol"],
    );
    assert.deepEqual(
      engine.allTenants(onType("alice", "read", "t1")).map((x) => x.tenant.key),
      ["t1", "t2"],
    );
    t.set(T0 + 60_000);
    assert.deepEqual(Object.keys(engine.userPermissions({ user: { key: "alice" } })), ["__tenant:t2"]);
    assert.deepEqual(engine.userTenants("bob"), []);
    assert.deepEqual(
      Object.keys(
        engine.authorizedUsers({ action: "read", resource: { type: "document", key: "d1" } }).users,
      ),
      ["carol"],
    );
    assert.deepEqual(
      engine.allTenants(onType("alice", "read", "t1")).map((x) => x.tenant.key),
      ["t2"],
    );
  });

  test("changes: an upsert with an expiry, a later extension, a removal of the expiry, and the purge's delete", () => {
    const t = manualClock(T0);
    const engine = createEngine({ ...data(), role_assignments: [] }, t);
    const assignment = { user: "carol", role: "writer", tenant: "t2" };
    engine.apply({
      kind: "role_assignment",
      op: "upsert",
      data: { ...assignment, expires_at: iso(T0 + 10) },
    });
    assert.equal(engine.check(onType("carol", "write", "t2")).allow, true);
    // Re-assigned with a later instant: the earlier one no longer applies.
    engine.apply({
      kind: "role_assignment",
      op: "upsert",
      data: { ...assignment, expires_at: iso(T0 + 20) },
    });
    t.set(T0 + 15);
    assert.equal(engine.check(onType("carol", "write", "t2")).allow, true);
    t.set(T0 + 20);
    assert.equal(denyOf(engine.check(onType("carol", "write", "t2"))).expired?.length, 1);
    // The purge's delete forgets the expired grant: the deny no longer mentions it.
    engine.apply({ kind: "role_assignment", op: "delete", data: assignment });
    assert.equal(denyOf(engine.check(onType("carol", "write", "t2"))).expired, undefined);
    // Assigned again without an expiry: permanent.
    engine.apply({
      kind: "role_assignment",
      op: "upsert",
      data: { ...assignment, expires_at: iso(T0 + 30) },
    });
    engine.apply({ kind: "role_assignment", op: "upsert", data: assignment });
    t.set(T0 + 1_000_000);
    assert.equal(engine.check(onType("carol", "write", "t2")).allow, true);
  });

  test("expiring assignments deleted or re-timed before their instant leave nothing behind: checks stop reading the clock", () => {
    let reads = 0;
    const engine = createEngine(
      { ...data(), role_assignments: [] },
      {
        clock: () => {
          reads++;
          return T0;
        },
      },
    );
    const assignment = { user: "carol", role: "writer", tenant: "t2" };
    // Re-timed many times (each leaves an old heap entry behind), then deleted long before any instant.
    for (let i = 1; i <= 500; i++) {
      engine.apply({
        kind: "role_assignment",
        op: "upsert",
        data: { ...assignment, expires_at: iso(T0 + i * 1000) },
      });
    }
    engine.apply({ kind: "role_assignment", op: "delete", data: assignment });
    reads = 0;
    assert.equal(engine.check(onType("carol", "write", "t2")).allow, false);
    assert.equal(reads, 0, "nothing pending: a check pays one comparison, no clock read");
  });

  test("an assignment loaded already expired never grants; the deny path leaves the facts as they were", () => {
    const t = manualClock(T0 + 3_600_000);
    const engine = createEngine(data(), t);
    for (let i = 0; i < 3; i++) {
      const reason = denyOf(engine.check(onType("alice", "write", "t1")));
      assert.equal(reason.expired?.length, 1);
      assert.equal(engine.check(onType("carol", "read", "t1")).allow, true);
      assert.deepEqual(Object.keys(engine.userPermissions({ user: { key: "alice" } })), ["__tenant:t2"]);
    }
    // A deleted user takes its expired grants along.
    engine.apply({ kind: "user", op: "delete", data: { key: "alice" } });
    engine.apply({ kind: "user", op: "upsert", data: { key: "alice" } });
    assert.equal(denyOf(engine.check(onType("alice", "write", "t1"))).expired, undefined);
  });

  test("deletes that cascade to assignments take the expired grants they cover along", () => {
    const t = manualClock(T0 + 3_600_000);
    const engine = createEngine(data(), t);
    assert.equal(denyOf(engine.check(onType("alice", "write", "t1"))).expired?.length, 1);
    assert.equal(denyOf(engine.check(onDoc("bob", "read"))).expired?.length, 1);
    // The tenant goes and comes back: alice's ended role there is not named any more.
    engine.apply({ kind: "tenant", op: "delete", data: { key: "t1" } });
    engine.apply({ kind: "tenant", op: "upsert", data: { key: "t1" } });
    assert.equal(denyOf(engine.check(onType("alice", "write", "t1"))).expired, undefined);
    // The same for bob's role on a folder that is deleted and created again.
    engine.apply({
      kind: "resource_instance",
      op: "upsert",
      data: { resource: "document", key: "d1", tenant: "t1" },
    });
    engine.apply({ kind: "resource_instance", op: "delete", data: { resource: "folder", key: "f1" } });
    engine.apply({
      kind: "resource_instance",
      op: "upsert",
      data: { resource: "folder", key: "f1", tenant: "t1" },
    });
    engine.apply({
      kind: "relationship_tuple",
      op: "upsert",
      data: { subject: "folder:f1", relation: "parent", object: "document:d1", tenant: "t1" },
    });
    assert.equal(denyOf(engine.check(onDoc("bob", "read"))).expired, undefined);
  });

  test("many expiries in any order end each at its own instant", () => {
    const t = manualClock(T0);
    const engine = createEngine({ ...data(), role_assignments: [] }, t);
    const order = [7, 3, 9, 1, 5, 2, 8, 4, 6, 0];
    for (const i of order) {
      engine.apply({ kind: "user", op: "upsert", data: { key: `u${i}` } });
      engine.apply({
        kind: "role_assignment",
        op: "upsert",
        data: { user: `u${i}`, role: "reader", tenant: "t1", expires_at: iso(T0 + 1000 * (i + 1)) },
      });
    }
    for (let step = 0; step <= 10; step++) {
      t.set(T0 + 1000 * step);
      const allowed = order.filter((i) => engine.check(onType(`u${i}`, "read", "t1")).allow).sort();
      assert.deepEqual(allowed, order.filter((i) => i >= step).sort(), `at step ${step}`);
    }
  });
});
