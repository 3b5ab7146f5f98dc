import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { startTestPdp, type TestPdp } from "../helpers/pdp.ts";
import { editPolicy, seedFolders } from "../helpers/policy-folders.ts";

describeEachDialect("policy replay", (env) => {
  let pdp: TestPdp | undefined;
  let draft = "";
  let revision = 0;
  const path = (t: TestEnv, envKey = "production") => `/v2/schema/${t.acme.projectId}/${envKey}/policy`;
  const replay = (t: TestEnv, body: unknown, key = t.acme.adminKey) =>
    t.call(key, "POST", `${path(t)}/replay`, body);
  const check = async (t: TestEnv, user: string, action: string, resource: string) => {
    const res = await t.call(t.acme.adminKey, "POST", `/v2/pdps/${t.acme.projectId}/production/allowed`, {
      user,
      action,
      resource: resource.includes(":") ? resource : { type: resource, tenant: "t1" },
    });
    assert.equal(res.status, 200, res.body);
    return res.json.allow as boolean;
  };

  before(async () => {
    const t = env();
    pdp = await startTestPdp(t);
    await seedFolders(t, "production");
    const exported = await t.call(t.acme.adminKey, "GET", path(t));
    draft = editPolicy(exported.json.policy);
    revision = exported.json.revision;
    // Logged decisions: ann's delete three times (the memo must count each), reads, a type-only check, and a
    // permissions query (not a single check: skipped).
    for (const [user, action, resource] of [
      ["ann", "delete", "document:d1"],
      ["ann", "delete", "document:d1"],
      ["ann", "read", "document:d1"],
      ["bob", "read", "document:d1"],
      ["bob", "delete", "document:d1"],
      ["ann", "delete", "document"],
      ["ann", "delete", "document:d1"],
    ] as const) {
      await check(t, user, action, resource);
    }
    const perms = await t.call(
      t.acme.adminKey,
      "POST",
      `/v2/pdps/${t.acme.projectId}/production/user-permissions`,
      {
        user: "ann",
      },
    );
    assert.equal(perms.status, 200, perms.body);
    await pdp.pdp.decisions.flush();
  });

  after(async () => {
    await pdp?.close();
  });

  test("the window's decisions that flip, with both reasons, counts by type and action, and the share", async () => {
    const t = env();
    const res = await replay(t, { draft: { policy: draft } });
    assert.equal(res.status, 200, res.body);
    const r = res.json;
    assert.equal(r.source, "decision_log");
    assert.equal(r.draft, "policy");
    assert.equal(r.revision, revision);
    assert.equal(r.replayed, 7);
    assert.equal(r.skipped, 1);
    assert.equal(r.flipped, 5);
    assert.equal(r.to_deny, 4);
    assert.equal(r.to_allow, 1);
    assert.equal(r.share, 5 / 7);
    assert.equal(r.changed_since_logged, 0);
    assert.equal(r.flips_truncated, false);
    assert.deepEqual(r.by_resource_action, [
      { resource_type: "document", action: "delete", replayed: 5, flipped: 4, to_allow: 0, to_deny: 4 },
      { resource_type: "document", action: "read", replayed: 2, flipped: 1, to_allow: 1, to_deny: 0 },
    ]);
    const annDelete = r.flips.filter(
      (f: { user: string; resource: { key?: string } }) => f.user === "ann" && f.resource.key === "d1",
    );
    assert.equal(annDelete.length, 3);
    for (const f of annDelete) {
      assert.deepEqual(f.before, { allow: true, reason: "allowed by role 'admin' in tenant 't1'" });
      assert.equal(f.after.allow, false);
      assert.match(f.after.reason, /^denied \(NO_PERMISSION\)/);
      assert.match(f.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7/);
      assert.ok(Date.parse(f.timestamp) > Date.now() - 600_000);
    }
    const bob = r.flips.find((f: { user: string }) => f.user === "bob");
    // As logged: the PDP names the default tenant; the instance's own tenant decides.
    assert.deepEqual(bob.resource, { type: "document", key: "d1", tenant: "default" });
    assert.equal(bob.before.allow, false);
    assert.match(bob.before.reason, /^denied/);
    assert.deepEqual(bob.after, {
      allow: true,
      reason: "allowed by role 'viewer' on document:d1, derived from 'reader' on folder:f1 via 'parent'",
    });
    assert.match(r.message, /^5 of 7 .* flip \(71\.4%\): 4 allow -> deny, 1 deny -> allow$/);

    const limited = await replay(t, { draft: { policy: draft }, limit: 2 });
    assert.equal(limited.json.flips.length, 2);
    assert.equal(limited.json.flipped, 5);
    assert.equal(limited.json.flips_truncated, true);
  });

  test("a window with no decisions says so; given checks replay instead of the log", async () => {
    const t = env();
    const empty = await replay(t, { draft: { policy: draft }, timestamp_from: 1_000, timestamp_to: 2_000 });
    assert.equal(empty.status, 200, empty.body);
    assert.equal(empty.json.replayed, 0);
    assert.equal(empty.json.flipped, 0);
    assert.equal(empty.json.share, 0);
    assert.equal(empty.json.message, "no decisions to replay in the window");
    assert.equal(empty.json.from, "1970-01-01T00:16:40.000+00:00");

    const checks = await replay(t, {
      draft: { policy: draft },
      checks: [
        { user: "ann", action: "delete", resource: "document:d1" },
        { user: "bob", action: "read", resource: { type: "document", key: "d1" } },
        { user: "bob", action: "delete", resource: "document:d1" },
      ],
    });
    assert.equal(checks.status, 200, checks.body);
    assert.equal(checks.json.source, "checks");
    assert.equal(checks.json.replayed, 3);
    assert.equal(checks.json.flipped, 2);
    assert.equal(checks.json.flips[0].id, undefined);
    assert.deepEqual(
      checks.json.flips.map((f: { user: string; after: { allow: boolean } }) => [f.user, f.after.allow]),
      [
        ["ann", false],
        ["bob", true],
      ],
    );
  });

  test("another environment's policy as the draft (environments as branches); a plan's stale revision is 409", async () => {
    const t = env();
    const applied = await t.call(t.acme.adminKey, "POST", `${path(t, "development")}/apply`, {
      policy: draft,
      revision: (await t.call(t.acme.adminKey, "GET", path(t, "development"))).json.revision,
    });
    assert.equal(applied.status, 200, applied.body);
    const branch = await replay(t, { draft: { environment: "development" } });
    assert.equal(branch.status, 200, branch.body);
    assert.equal(branch.json.draft, "environment");
    assert.equal(branch.json.flipped, 5);
    const byId = await replay(t, { draft: { environment: t.acme.envs.development } });
    assert.equal(byId.json.flipped, 5);
    const itself = await replay(t, { draft: { environment: "production" } });
    assert.equal(itself.json.flipped, 0);
    assert.equal(itself.json.replayed, 7);

    const plan = await replay(t, { draft: { policy: draft, revision } });
    assert.equal(plan.status, 200, plan.body);
    const stale = await replay(t, { draft: { policy: draft, revision: revision - 1 } });
    assert.equal(stale.status, 409, stale.body);
    assert.equal(stale.json.error_code, "CONFLICT");
  });

  test("bad input is a 4xx that names the problem; other organizations see nothing of the log", async () => {
    const t = env();
    for (const [body, status] of [
      [{ draft: {} }, 422],
      [{ draft: { policy: draft, environment: "development" } }, 422],
      [{ draft: { environment: "development", revision: 1 } }, 422],
      [{ draft: { policy: "resources:\n  doc:\n    colour: red\n" } }, 422],
      [{ draft: { policy: draft }, timestamp_from: 2_000, timestamp_to: 1_000 }, 422],
      [{ draft: { policy: draft }, limit: -1 }, 422],
      [{ draft: { policy: draft }, checks: [{ user: "ann" }] }, 422],
      [{ draft: { environment: "nowhere" } }, 404],
    ] as const) {
      const res = await replay(t, body);
      assert.equal(res.status, status, `${JSON.stringify(body)}: ${res.body}`);
      assert.equal(typeof res.json.message, "string");
    }
    const badFile = await replay(t, { draft: { policy: "resources:\n  doc:\n    colour: red\n" } });
    assert.match(
      JSON.stringify(badFile.json.detail),
      /line 3, column \d+, resources\.doc\.colour: unknown field/,
    );
    // Globex's production holds no decision of acme's; its key does not reach acme's environment.
    const globex = await t.call(
      t.globex.adminKey,
      "POST",
      `/v2/schema/${t.globex.projectId}/production/policy/replay`,
      { draft: { policy: draft } },
    );
    assert.equal(globex.status, 200, globex.body);
    assert.equal(globex.json.replayed, 0);
    const foreign = await replay(t, { draft: { policy: draft } }, t.globex.adminKey);
    assert.equal(foreign.status, 404, foreign.body);
  });
});
