import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import { startTestPdp, type TestPdp } from "../helpers/pdp.ts";
import { createEngine } from "../../src/pdp/engine/index.ts";
import { readSnapshot } from "../../src/domain/environment-snapshot.ts";
import { BATCH_ITEMS, readFeedAfter } from "../../src/changes/feed.ts";
import { readChangesAfter } from "../helpers/changes.ts";
import type { Engine } from "../../src/pdp/engine/index.ts";
import {
  derivedFromFolder,
  documentResource,
  folderResource,
  inFolder,
  postSetRule,
} from "../helpers/schema-api.ts";

/**
 * The change feed is the PDP's only input after its first snapshot: after any sequence of API writes, a replica fed
 * change by change must decide exactly as an engine built from a fresh snapshot of the database.
 */
describeEachDialect("change feed keeps a PDP replica equal to the database", (env) => {
  let pdp: TestPdp;
  let key = "";
  const S = "/v2/schema/default/production";
  const F = "/v2/facts/default/production";

  const write = async (method: "POST" | "PUT" | "PATCH" | "DELETE", url: string, body?: unknown) => {
    const res = await env().call(key, method, url, body);
    assert.ok(res.status < 300, `${method} ${url} -> ${res.status} ${res.body}`);
  };

  before(async () => {
    const { acme, call } = env();
    key = (await call(acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    pdp = await startTestPdp(env());
    // Load the replica before the writes, so everything below reaches it through the feed.
    await pdp.call(key, "/allowed", { user: "nobody", action: "read", resource: "document" });
  });
  after(async () => {
    await pdp?.close();
  });

  const users = ["u1", "u2", "u3", "u4"];
  const tenants = ["default", "t1", "t2"];
  const resources = [
    { type: "folder", keys: [undefined, "f1", "f2"] },
    { type: "document", keys: [undefined, "d1", "d2", "d3"] },
  ];
  const actions = ["read", "write", "share", "delete"];

  function decisions(engine: Engine): string[] {
    const out: string[] = [];
    for (const user of users) {
      for (const tenant of tenants) {
        for (const { type, keys } of resources) {
          for (const k of keys) {
            for (const action of actions) {
              const d = engine.check({
                user: { key: user },
                action,
                resource: { type, tenant, ...(k && { key: k }), attributes: { level: 3 } },
                context: {},
              });
              out.push(`${user} ${action} ${type}:${k ?? "*"}@${tenant} ${d.allow}`);
            }
          }
        }
      }
      out.push(`${user} permissions ${JSON.stringify(engine.userPermissions({ user: { key: user } }))}`);
    }
    return out;
  }

  async function assertReplicaMatchesDatabase(step: string) {
    const target = await pdp.pdp.resolve(`Bearer ${key}`, { headers: {} } as never);
    await target.replica.catchUp();
    const fresh = createEngine(
      (await readSnapshot(env().store.db, env().dialect, target.environmentId)).data,
    );
    const replica = decisions(target.replica.engine);
    const expected = decisions(fresh);
    const diff = replica.filter((line, i) => line !== expected[i]).slice(0, 5);
    assert.deepEqual(
      diff,
      [],
      `after ${step}: replica differs from a fresh snapshot, e.g. ${diff.join(" | ")}`,
    );
    assert.ok(
      expected.some((l) => l.endsWith(" true")),
      `after ${step}: the scenario allows something`,
    );
  }

  test("after schema and fact writes, updates and cascading deletes", async () => {
    await write(
      "POST",
      `${S}/resources`,
      folderResource(["read", "write", "share"], {
        editor: { name: "Editor", permissions: ["read", "write"] },
        owner: { name: "Owner", permissions: ["share"], extends: ["editor"] },
      }),
    );
    await write(
      "POST",
      `${S}/resources`,
      documentResource(["read", "write", "share", "delete"], {
        owner: derivedFromFolder("owner", ["delete", "share"]),
      }),
    );
    await write("POST", `${S}/roles`, {
      key: "viewer",
      name: "Viewer",
      permissions: ["document:read", "folder:read"],
    });
    await write("POST", `${S}/roles`, {
      key: "admin",
      name: "Admin",
      permissions: ["document:delete"],
      extends: ["viewer"],
    });
    for (const t of ["t1", "t2"])
      await write("POST", `${F}/tenants`, { key: t, name: t, attributes: { tier: t } });
    await write("POST", `${F}/users`, {
      key: "u1",
      attributes: { level: 5 },
      role_assignments: [{ role: "viewer", tenant: "t1" }],
    });
    await write("POST", `${F}/users`, { key: "u2", role_assignments: [{ role: "admin", tenant: "t2" }] });
    await write("POST", `${F}/users`, { key: "u3" });
    await write("POST", `${F}/users`, { key: "u4", attributes: { level: 1 } });
    await write("POST", `${F}/resource_instances`, { key: "f1", resource: "folder", tenant: "t1" });
    await write("POST", `${F}/relationship_tuples`, inFolder("f1", "d1", "t1"));
    await write("POST", `${F}/relationship_tuples`, inFolder("f1", "d2", "t1"));
    await write("POST", `${F}/relationship_tuples`, inFolder("f2", "d3", "t2"));
    await write("POST", `${F}/role_assignments`, {
      user: "u3",
      role: "owner",
      resource_instance: "folder:f1",
    });
    await write("POST", `${F}/role_assignments`, {
      user: "u4",
      role: "editor",
      resource_instance: "folder:f2",
    });
    await postSetRule(write, S, F, {
      userSet: { key: "senior", name: "Senior", condition: { "user.level": { "greater-than-equals": 3 } } },
      resourceSet: { key: "docs", name: "Docs", condition: { "resource.level": { "less-than": 4 } } },
      permission: "document:share",
    });
    await assertReplicaMatchesDatabase("creating everything");

    await write("PATCH", `${F}/users/u4`, { attributes: { level: 9 } });
    await write("DELETE", `${S}/roles/viewer/permissions`, { permissions: ["folder:read"] });
    await write("POST", `${S}/resources/document/roles/editor/permissions`, { permissions: ["share"] });
    await write("DELETE", `${F}/relationship_tuples`, {
      subject: "folder:f1",
      relation: "parent",
      object: "document:d2",
    });
    await write("DELETE", `${F}/role_assignments`, { user: "u1", role: "viewer", tenant: "t1" });
    await write("POST", `${F}/role_assignments`, { user: "u1", role: "viewer", tenant: "default" });
    await assertReplicaMatchesDatabase("updates and removals");

    await write("DELETE", `${S}/resources/folder/actions/share`);
    await assertReplicaMatchesDatabase("deleting an action that roles grant");

    await write("DELETE", `${F}/tenants/t2`);
    await assertReplicaMatchesDatabase("deleting a tenant with users' roles, instances and tuples");

    await write("DELETE", `${S}/roles/viewer`);
    await write("DELETE", `${F}/users/u3`);
    await assertReplicaMatchesDatabase("deleting a role and a user");

    await write("DELETE", `${S}/resources/folder`);
    await assertReplicaMatchesDatabase("deleting a resource type that others relate to");
  });

  test("a bulk write is one batch record per 1,000 changes, which the replica applies whole", async () => {
    const { store, acme } = env();
    const envId = acme.envs.production;
    const revision = async () =>
      Number(
        (
          await store.db
            .selectFrom("environments")
            .select("revision")
            .where("id", "=", envId)
            .executeTakeFirstOrThrow()
        ).revision,
      );
    // Whether the test above ran or not.
    const made = await env().call(key, "POST", `${S}/resources`, documentResource(["read"], {}));
    assert.ok(made.status < 300 || made.status === 409, made.body);
    await write("POST", `${S}/roles`, { key: "reader", name: "Reader", permissions: ["document:read"] });
    // 600 users created on the way (missing_user_policy=create) and 603 assignments: 1,203 changes in one revision.
    const many = Array.from({ length: 600 }, (_, i) => `b${i}`);
    const before = await revision();
    await write("POST", `${F}/role_assignments/bulk?missing_user_policy=create`, [
      ...["u1", "u2", "u4"].map((user) => ({ user, role: "reader", tenant: "t1" })),
      ...many.map((user) => ({ user, role: "reader", tenant: "t1" })),
    ]);
    assert.equal(await revision(), before + 1, "one revision");
    const entries = (await readFeedAfter(store.db, envId, before, 1))?.entries ?? [];
    assert.deepEqual(
      entries.map((e) => [e.seq, e.kind, e.op, Array.isArray(e.data) ? e.data.length : 0]),
      [
        [0, "batch", "apply", BATCH_ITEMS],
        [1, "batch", "apply", 2 * many.length + 3 - BATCH_ITEMS],
      ],
    );
    // Read one by one, the batch is the items in order.
    const items = await readChangesAfter(store.db, envId, before, before + 1);
    assert.equal(items.length, 2 * many.length + 3);
    assert.deepEqual(
      items.slice(0, 5).map((c) => [c.seq, c.kind, c.op, (c.data as { user?: string; key?: string }).user]),
      [
        [0, "role_assignment", "upsert", "u1"],
        [1, "role_assignment", "upsert", "u2"],
        [2, "role_assignment", "upsert", "u4"],
        [3, "user", "upsert", undefined],
        [4, "role_assignment", "upsert", "b0"],
      ],
    );
    assert.deepEqual(items.at(-1)?.seq, 2 * many.length + 2);
    await assertReplicaMatchesDatabase("a bulk assignment of 603 roles that creates 600 users");
    const target = await pdp.pdp.resolve(`Bearer ${key}`, { headers: {} } as never);
    const bLast = many.at(-1) ?? "";
    assert.equal(
      target.replica.engine.check({
        user: { key: bLast },
        action: "read",
        resource: { type: "document", tenant: "t1" },
        context: {},
      }).allow,
      true,
      "the last item of the second batch record reached the replica",
    );

    await write("DELETE", `${F}/role_assignments/bulk`, [
      { user: "u1", role: "reader", tenant: "t1" },
      { user: "u4", role: "reader", tenant: "t1" },
    ]);
    const removal = (await readFeedAfter(store.db, envId, before + 1, 1))?.entries ?? [];
    assert.deepEqual(
      removal.map((e) => [e.kind, changesOfLength(e.data)]),
      [["batch", 2]],
    );
    await assertReplicaMatchesDatabase("a bulk removal");
  });
});

const changesOfLength = (data: unknown) => (Array.isArray(data) ? data.length : -1);
