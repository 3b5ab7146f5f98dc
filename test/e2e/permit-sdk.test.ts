import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Permit } from "permitio";
import { startServerProcess } from "../helpers/process.ts";
import { documentResource, folderResource } from "../helpers/schema-api.ts";

const BOOTSTRAP = "permit-sdk-e2e-bootstrap-key-0000000000";
// The SDK's `useOpa` always calls port 8181 on the PDP's host.
const OPA_PORT = 8181;

test("Permit's published SDK drives a full RBAC and ReBAC setup and checks against a running Gatehouse", async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-sdk-"));
  const server = await startServerProcess(
    {
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_BOOTSTRAP_API_KEY: BOOTSTRAP,
      GATEHOUSE_OPA_PORT: String(OPA_PORT),
    },
    [],
    { pdp: true },
  );
  const { pdpPort } = server;
  try {
    const keyRes = await fetch(`${server.baseUrl}/v2/api-key/default/production`, {
      headers: { authorization: `Bearer ${BOOTSTRAP}` },
    });
    const token = (await keyRes.json()).secret as string;
    const pdp = `http://127.0.0.1:${pdpPort}`;
    const permit = new Permit({ token, pdp, apiUrl: server.baseUrl });

    // Schema: a folder and a document linked by `parent`; folder editors derive document editors.
    await permit.api.resources.create(folderResource());
    const document = await permit.api.resources.create(documentResource());
    assert.deepEqual(Object.keys(document.actions ?? {}).sort(), ["delete", "read", "write"]);
    const viewer = await permit.api.roles.create({
      key: "viewer",
      name: "Viewer",
      permissions: ["document:read"],
    });
    assert.deepEqual(viewer.permissions, ["document:read"]);
    const bare = await permit.api.roles.create({ key: "nobody", name: "Nobody" });
    assert.deepEqual(bare.permissions, []);
    assert.deepEqual((await permit.api.roles.list()).map((r) => r.key).sort(), ["nobody", "viewer"]);

    // Facts: tenants, users (sync reports created on the first call only), assignments, tuples.
    const t1 = await permit.api.tenants.create({ key: "t1", name: "Tenant 1" });
    assert.equal(t1.attributes, null);
    const first = await permit.api.users.sync({
      key: "alice",
      email: "alice@example.com",
      attributes: { age: 50 },
    });
    assert.equal(first.created, true);
    assert.equal((first.user.attributes as Record<string, unknown> | undefined)?.["age"], 50);
    const second = await permit.api.users.sync({
      key: "alice",
      email: "alice@example.com",
      first_name: "Alice",
    });
    assert.equal(second.created, false);
    await permit.api.users.create({ key: "carol" });
    const assignment = await permit.api.users.assignRole({ user: "alice", role: "viewer", tenant: "t1" });
    assert.equal(assignment.user, "alice");
    assert.equal(assignment.tenant, "t1");
    await permit.api.relationshipTuples.create({
      subject: "folder:f1",
      relation: "parent",
      object: "document:d1",
      tenant: "t1",
    });
    const instanceRole = await permit.api.roleAssignments.assign({
      user: "carol",
      role: "editor",
      resource_instance: "folder:f1",
      tenant: "t1",
    });
    assert.equal(instanceRole.resource_instance, "folder:f1");
    const users = await permit.api.users.list();
    assert.deepEqual(users.data.map((u) => u.key).sort(), ["alice", "carol"]);
    const assigned = await permit.api.users.getAssignedRoles({ user: "alice" });
    assert.deepEqual(
      assigned.map((a) => [a.role, a.tenant]),
      [["viewer", "t1"]],
    );

    // Checks through the PDP, read-your-writes included: the assignment above is already visible.
    assert.equal(await permit.check("alice", "read", { type: "document", tenant: "t1" }), true);
    assert.equal(await permit.check("alice", "delete", { type: "document", tenant: "t1" }), false);
    assert.equal(
      await permit.check("alice", "read", "document"),
      false,
      "alice has no role in the default tenant",
    );
    assert.equal(await permit.check("carol", "write", { type: "document", key: "d1", tenant: "t1" }), true);
    assert.equal(await permit.check("carol", "delete", { type: "document", key: "d1", tenant: "t1" }), false);
    assert.equal(
      await permit.check("alice", "read", { type: "document", tenant: "t1" }, {}, { useOpa: true }),
      true,
    );
    assert.equal(
      await permit.check("alice", "delete", { type: "document", tenant: "t1" }, {}, { useOpa: true }),
      false,
    );
    const bulk = await permit.bulkCheck([
      { user: "alice", action: "read", resource: { type: "document", tenant: "t1" } },
      { user: "carol", action: "write", resource: { type: "document", key: "d1", tenant: "t1" } },
      { user: "carol", action: "read", resource: { type: "document", tenant: "t1" } },
    ]);
    assert.deepEqual(bulk, [true, true, false]);
    const permissions = await permit.getUserPermissions("alice");
    assert.deepEqual(permissions["__tenant:t1"]?.permissions, ["document:read"]);

    await permit.api.users.assignRole({ user: "carol", role: "viewer", tenant: "t1" });
    assert.equal(
      await permit.check("carol", "read", { type: "document", tenant: "t1" }),
      true,
      "read-your-writes through the API",
    );
    await permit.api.users.unassignRole({ user: "carol", role: "viewer", tenant: "t1" });
    assert.equal(await permit.check("carol", "read", { type: "document", tenant: "t1" }), false);

    // The same through the PDP's facts proxy, as `proxyFactsViaPdp` clients do.
    const proxied = new Permit({ token, pdp, apiUrl: server.baseUrl, proxyFactsViaPdp: true });
    await proxied.api.users.create({ key: "dave" });
    await proxied.api.users.assignRole({ user: "dave", role: "viewer", tenant: "t1" });
    assert.equal(
      await proxied.check("dave", "read", { type: "document", tenant: "t1" }),
      true,
      "read-your-writes through the proxy",
    );
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
