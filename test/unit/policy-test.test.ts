import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { policyCommand } from "../../src/cli/policy.ts";

const POLICY = `resources:
  folder:
    actions: { read: {} }
    roles: { reader: { permissions: [read] } }
  document:
    actions: { read: {}, delete: {} }
    relations: { parent: { subject: folder } }
    roles:
      viewer:
        permissions: [read]
        derived_from: [{ role: reader, on_resource: folder, linked_by_relation: parent }]
roles:
  admin: { permissions: ["document:read", "document:delete"] }
`;

const TESTS = `facts:
  tenants: [{ key: t1 }]
  users: [{ key: ann }, { key: bob }]
  role_assignments:
    - { user: ann, role: admin, tenant: t1 }
    - { user: bob, role: reader, tenant: t1, resource_instance: "folder:f1" }
  resource_instances:
    - { resource: folder, key: f1, tenant: t1 }
    - { resource: document, key: d1, tenant: t1 }
  relationship_tuples:
    - { subject: "folder:f1", relation: parent, object: "document:d1", tenant: t1 }
cases:
  - { name: admins delete, user: ann, action: delete, resource: "document:d1", tenant: t1, allow: true, reason: rbac }
  - { name: readers of the folder read its documents, user: bob, action: read, resource: "document:d1", tenant: t1, allow: true, reason: rebac }
  - { name: readers do not delete, user: bob, action: delete, resource: "document:d1", tenant: t1, allow: false }
`;

async function run(...argv: string[]) {
  let out = "";
  let err = "";
  const code = await policyCommand(argv, { env: {}, out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

test("policy test: cases pass on the engine built from the file; a failing case prints the decision's explanation", async () => {
  const dir = await mkdtemp(join(tmpdir(), "gatehouse-policy-test-"));
  const policy = join(dir, "policy.yaml");
  const tests = join(dir, "tests.yaml");
  await writeFile(policy, POLICY);
  await writeFile(tests, TESTS);
  const ok = await run("test", tests, "--policy", policy);
  assert.equal(ok.code, 0, ok.out + ok.err);
  assert.equal(ok.out, "3 passed, 0 failed\n");

  // The policy changes: admins lose delete. The test file catches it.
  await writeFile(policy, POLICY.replace(', "document:delete"', ""));
  const failed = await run("test", tests, "--policy", policy);
  assert.equal(failed.code, 1);
  assert.match(
    failed.out,
    /^FAIL admins delete: expected allow, got deny; expected reason rbac, got NO_PERMISSION\n {5}decision: \{"kind":"deny","code":"NO_PERMISSION"/,
  );
  assert.match(failed.out, /2 passed, 1 failed\n$/);

  const junit = await run("test", tests, "--policy", policy, "--format", "junit");
  assert.equal(junit.code, 1);
  assert.match(junit.out, /<testsuites tests="3" failures="1">/);
  assert.match(
    junit.out,
    /<testcase name="admins delete" classname="[^"]+"><failure message="expected allow, got deny/,
  );

  const tap = await run("test", tests, "--policy", policy, "--format", "tap");
  assert.match(tap.out, /^TAP version 13\n1\.\.3\nnot ok 1 - admins delete\n/m);
  assert.match(tap.out, /\nok 2 - readers of the folder read its documents\n/);

  await writeFile(policy, "resources:\n  doc:\n    roles: { r: { permissions: [nope] } }\n");
  const bad = await run("test", tests, "--policy", policy);
  assert.equal(bad.code, 1);
  assert.match(
    bad.err,
    /line 3, column \d+, resources\.doc\.roles\.r\.permissions\[0\]: unknown action 'nope'/,
  );
  const neither = await run("test", tests);
  assert.equal(neither.code, 1);
  assert.match(neither.err, /one of --policy FILE and --env/);
});
