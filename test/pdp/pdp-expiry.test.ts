import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import { startTestPdp, type TestPdp } from "../helpers/pdp.ts";
import { revisionOf } from "../helpers/facts.ts";
import { createEngine } from "../../src/pdp/engine/index.ts";
import { readSnapshot } from "../../src/domain/environment-snapshot.ts";
import { purgeExpiredAssignments } from "../../src/modules/role-assignments/role-assignments.service.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** How far ahead the short grant ends: long enough for the setup on a loaded machine, short for the suite. */
const HORIZON_MS = 3000;

describeEachDialect("PDP over HTTP: role assignments with an expiry", (env) => {
  let pdp: TestPdp;
  let key = "";
  const S = "/v2/schema/default/production";
  const F = "/v2/facts/default/production";

  const ok = async (url: string, body: unknown) => {
    const res = await env().call(key, "POST", url, body);
    assert.ok(res.status >= 200 && res.status < 300, `POST ${url} -> ${res.status} ${res.body}`);
    return res;
  };
  const check = (user: string) =>
    pdp.call(key, "/allowed", {
      user: { key: user },
      action: "read",
      resource: { type: "document", tenant: "t1" },
      context: {},
    });

  before(async () => {
    const { acme, call } = env();
    key = (await call(acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    pdp = await startTestPdp(env());
    await ok(`${S}/resources`, { key: "document", name: "Document", actions: { read: {} } });
    await ok(`${S}/roles`, { key: "viewer", name: "Viewer", permissions: ["document:read"] });
    await ok(`${F}/tenants`, { key: "t1", name: "t1" });
    await ok(`${F}/users`, { key: "bob", role_assignments: [{ role: "viewer", tenant: "t1" }] });
    // A grant a year ahead, seen before the replica loads: it comes in through the snapshot.
    await ok(`${F}/users`, {
      key: "carol",
      role_assignments: [
        { role: "viewer", tenant: "t1", expires_at: new Date(Date.now() + 365 * 86_400_000).toISOString() },
      ],
    });
  });
  after(async () => {
    await pdp?.close();
  });

  test("a grant expiring shortly stops granting at its instant, before any purge; the deny says it expired; the purge's delete reaches the PDP", async () => {
    const e = env();
    const envId = e.acme.envs.production;
    assert.equal((await check("carol")).json.allow, true, "a grant loaded from the snapshot");
    const expiresAt = new Date(Date.now() + HORIZON_MS);
    const expiry = expiresAt.toISOString().replace("Z", "+00:00");
    await ok(`${F}/users`, {
      key: "alice",
      role_assignments: [{ role: "viewer", tenant: "t1", expires_at: expiry }],
    });
    const before = await check("alice");
    assert.ok(Date.now() < expiresAt.getTime(), "the setup finished before the instant");
    assert.equal(before.json.allow, true, before.body);

    // The snapshot a standalone PDP starts from carries the expiry too.
    const snapshot = await readSnapshot(e.store.db, e.store.dialect, envId);
    const query = { user: { key: "alice" }, action: "read", resource: { type: "document", tenant: "t1" } };
    const at = (ms: number) => createEngine(snapshot.data, { clock: () => ms }).check(query).allow;
    assert.deepEqual([at(expiresAt.getTime() - 1), at(expiresAt.getTime())], [true, false]);

    await sleep(expiresAt.getTime() - Date.now() + 20);
    const after = await check("alice");
    assert.equal(after.json.allow, false, after.body);
    assert.equal(after.json.debug.reason.code, "NO_ROLE_IN_TENANT");
    assert.deepEqual(after.json.debug.reason.expired, [{ role: "viewer", tenant: "t1", expired_at: expiry }]);
    assert.match(after.json.debug.reason.message, /role viewer in tenant 't1' expired at /);
    assert.equal((await check("bob")).json.allow, true);
    assert.equal((await check("carol")).json.allow, true);
    // Listings drop the grant as well.
    const perms = await pdp.call(key, "/user-permissions", { user: { key: "alice" } });
    assert.deepEqual(perms.json, {});
    const tenants = await pdp.call(key, "/user-tenants", { user: { key: "alice" } });
    assert.deepEqual(tenants.json, []);
    const authorized = await pdp.call(key, "/authorized_users", {
      action: "read",
      resource: { type: "document", tenant: "t1" },
    });
    assert.deepEqual(Object.keys(authorized.json.users), ["bob", "carol"]);
    // No purge has run: the row is still there, the PDP decided on the instant alone.
    const alice = (await e.call(key, "GET", `${F}/users/alice`)).json.id as string;
    const rows = () =>
      e.store.db.selectFrom("role_assignments").select("id").where("user_id", "=", alice).execute();
    assert.equal((await rows()).length, 1);

    // The purge deletes the row and announces the delete; the PDP applies it (the deny no longer names an
    // expired grant, since the assignment is gone) at the new revision.
    assert.equal(await purgeExpiredAssignments({ db: e.store.db, notifier: e.app.notifier }), 1);
    assert.equal((await rows()).length, 0);
    const revision = await revisionOf(e, envId);
    const purged = await pdp.call(
      key,
      "/allowed",
      { user: { key: "alice" }, action: "read", resource: { type: "document", tenant: "t1" }, context: {} },
      { "x-gatehouse-min-revision": String(revision) },
    );
    assert.equal(purged.json.allow, false);
    assert.equal(purged.json.debug.revision, revision);
    assert.equal(purged.json.debug.reason.expired, undefined, purged.body);
    assert.doesNotMatch(purged.json.debug.reason.message, /expired/);
  });
});
