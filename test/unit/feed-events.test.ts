import { test } from "node:test";
import assert from "node:assert/strict";
import { feedEventBodies, publicChanges } from "../../src/changes/events.ts";

const scope = { organization_id: "org-1", project_id: "proj-1", environment_id: "env-1" };
const at = "2026-11-28T10:00:00.000+00:00";

/** The body enqueueEvents writes for a feed event once the revision is known: what receivers have always got. */
function bodyOf(revision: number, type: string, records: Parameters<typeof publicChanges>[2]) {
  const changes = publicChanges(revision, at, records).filter(
    (c) => `${c.category}.${c.object_type}` === type,
  );
  return JSON.stringify({ type, timestamp: at, data: { ...scope, revision, changes } });
}

test("a feed event's body cut around its revision joins back into the body with the revision", () => {
  const records = [
    { kind: "user", op: "upsert", data: { key: 'ann "a"\n\\', attributes: { n: 42, nested: ["x", null] } } },
    { kind: "resource", op: "upsert", data: { key: "doc", actions: ["read"] } },
    {
      kind: "batch",
      op: "apply",
      data: [
        { kind: "user", op: "delete", data: { key: "bob" } },
        { kind: "tenant", op: "upsert", data: { key: "t1", name: "T\u2028one", revision: 7 } },
      ],
    },
  ];
  const bodies = feedEventBodies(scope, at, records);
  assert.deepEqual(
    bodies.map((b) => b.type),
    ["facts.user", "schema.resource", "facts.tenant"],
  );
  for (const body of bodies) {
    for (const revision of [1, 1234567]) {
      assert.equal(body.parts.join(String(revision)), bodyOf(revision, body.type, records));
    }
  }
});

test("an organization-wide scope (no project) and a bulk write cut into events of 1000 changes", () => {
  const orgScope = { organization_id: "org-1", project_id: null, environment_id: null };
  const items = Array.from({ length: 1001 }, (_, i) => ({
    kind: "user",
    op: "upsert",
    data: { key: `u${i}` },
  }));
  const bodies = feedEventBodies(orgScope, at, [{ kind: "batch", op: "apply", data: items }]);
  assert.equal(bodies.length, 2);
  const first = JSON.parse(bodies[0]!.parts.join("9"));
  const second = JSON.parse(bodies[1]!.parts.join("9"));
  assert.equal(first.data.project_id, null);
  assert.equal(first.data.changes.length, 1000);
  assert.deepEqual(second.data.changes, [
    {
      revision: 9,
      seq: 1000,
      at,
      category: "facts",
      object_type: "user",
      action: "upsert",
      object: { key: "u1000" },
    },
  ]);
  assert.equal(bodies[0]!.parts.join("9"), JSON.stringify({ ...first }));
});
