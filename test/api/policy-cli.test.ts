import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { policyCommand } from "../../src/cli/policy.ts";
import { describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { post, startTestPdp, type TestPdp } from "../helpers/pdp.ts";
import { editPolicy, seedFolders } from "../helpers/policy-folders.ts";

interface Check {
  user: string;
  action: string;
  resource: string | { type: string; tenant: string };
}

/** Every user (carol is unknown), action and resource of the folder policy, by key and by type. */
const CHECKS: Check[] = ["ann", "bob", "carol"].flatMap((user) =>
  ["read", "delete"].flatMap((action) =>
    ["document:d1", "folder:f1", { type: "document", tenant: "t1" }].map((resource) => ({
      user,
      action,
      resource,
    })),
  ),
);
const checkName = (c: Check) =>
  `${c.user} ${c.action} ${typeof c.resource === "string" ? c.resource : c.resource.type}`;

/** Today's behaviour, as a test file with its own facts. */
const TESTS = `facts:
  tenants: [{ key: t1 }]
  users: [{ key: ann }, { key: bob }]
  role_assignments:
    - { user: ann, role: admin, tenant: t1 }
    - { user: bob, role: reader, tenant: t1, resource_instance: "folder:f1" }
  resource_instances: [{ resource: folder, key: f1, tenant: t1 }, { resource: document, key: d1, tenant: t1 }]
  relationship_tuples: [{ subject: "folder:f1", relation: parent, object: "document:d1", tenant: t1 }]
cases:
  - { name: admins delete documents, user: ann, action: delete, resource: "document:d1", tenant: t1, allow: true, reason: rbac }
  - { name: folder readers do not read documents, user: bob, action: read, resource: "document:d1", tenant: t1, allow: false }
  - { name: folder readers read folders, user: bob, action: read, resource: "folder:f1", tenant: t1, allow: true }
`;

/** Cases for the live environment after the change: no facts (the environment's own are used). */
const LIVE_TESTS = `cases:
  - { name: folder readers read documents, user: bob, action: read, resource: "document:d1", allow: true, reason: rebac }
  - { name: admins read, user: ann, action: read, resource: "document:d1", allow: true, reason: rbac }
  - { name: admins still delete, user: ann, action: delete, resource: "document:d1", allow: true }
`;

/**
 * What a CI pipeline does, through the CLI against a listening server: export production, edit the file (remove a
 * permission, add a derivation), plan (exit 2, exactly those changes), the test file catches the change, replay of
 * the logged decisions lists exactly the ones that flip (checked against /allowed on both versions), apply (one
 * revision), and the PDP follows.
 */
describeEachDialect("gatehouse policy export | plan | apply", (env) => {
  let url = "";
  let dir = "";
  let pdp: TestPdp | undefined;
  const cli = async (t: TestEnv, ...argv: string[]) => {
    let out = "";
    let err = "";
    const code = await policyCommand(argv, {
      env: { GATEHOUSE_URL: url, GATEHOUSE_API_KEY: t.acme.adminKey },
      out: (text) => (out += text),
      err: (text) => (err += text),
    });
    return { code, out, err };
  };
  /** A check over HTTP to the listening control plane, answered by its PDP (which logs it). */
  const allowed = async (t: TestEnv, check: Check) => {
    const res = await post(`${url}/v2/pdps/${t.acme.projectId}/production/allowed`, t.acme.adminKey, check);
    assert.equal(res.status, 200, res.body);
    return res.json.allow as boolean;
  };
  const revisionOf = async (t: TestEnv) =>
    Number(
      (
        await t.store.db
          .selectFrom("environments")
          .select("revision")
          .where("id", "=", t.acme.envs.production)
          .executeTakeFirstOrThrow()
      ).revision,
    );

  before(async () => {
    const t = env();
    await t.app.listen({ host: "127.0.0.1", port: 0 });
    const address = t.app.server.address();
    url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    dir = await mkdtemp(join(tmpdir(), "gatehouse-policy-"));
    pdp = await startTestPdp(t);
    await seedFolders(t, "production");
  });

  after(async () => {
    await pdp?.close();
  });

  test("export → edit → plan exits 2 with exactly the edits → tests catch it → replay lists exactly the flips → apply in one revision → the PDP follows", async () => {
    const t = env();
    const target = `${t.acme.projectId}/production`;
    const file = join(dir, `${t.dialect}.yaml`);
    const exported = await cli(t, "export", "--env", target, "--out", file);
    assert.equal(exported.code, 0, exported.err);
    const text = await readFile(file, "utf8");
    const same = await cli(t, "plan", file, "--env", target);
    assert.equal(same.code, 0, same.err);
    assert.match(same.out, /No changes/);

    // Production's traffic, logged by its PDP: every user, action and resource, some twice.
    const before = new Map<string, boolean>();
    for (const round of [1, 2]) {
      for (const check of CHECKS) {
        if (round === 2 && check.user === "carol") continue;
        before.set(checkName(check), await allowed(t, check));
      }
    }
    assert.equal(before.get("ann delete document:d1"), true);
    assert.equal(before.get("bob read document:d1"), false);
    await pdp!.pdp.decisions.flush();

    await writeFile(file, editPolicy(text));
    const plan = await cli(t, "plan", file, "--env", target);
    assert.equal(plan.code, 2, plan.err);
    assert.deepEqual(plan.out.trim().split("\n"), [
      "~ resource_role document:viewer (derived_from)",
      "~ role admin (permissions)",
      `Plan: 0 to create, 2 to change, 0 to delete (revision ${/revision (\d+)/.exec(plan.out)?.[1]}).`,
    ]);
    const revision = Number(/revision (\d+)/.exec(plan.out)?.[1]);

    // The test file, written for today's behaviour, passes on the exported file and catches both changes.
    const tests = join(dir, `${t.dialect}-tests.yaml`);
    await writeFile(tests, TESTS);
    const original = join(dir, `${t.dialect}-original.yaml`);
    await writeFile(original, text);
    const passing = await cli(t, "test", tests, "--policy", original);
    assert.equal(passing.code, 0, passing.out);
    const failing = await cli(t, "test", tests, "--policy", file);
    assert.equal(failing.code, 1, failing.out);
    assert.match(failing.out, /FAIL admins delete documents: expected allow, got deny/);
    assert.match(failing.out, /FAIL folder readers do not read documents: expected deny, got allow/);
    assert.match(failing.out, /1 passed, 2 failed/);

    // Replay of the logged decisions against the plan: exit 2, every flip listed with both reasons.
    const replayed = await cli(
      t,
      "replay",
      file,
      "--env",
      target,
      "--revision",
      String(revision),
      "--since",
      "1h",
      "--format",
      "json",
    );
    assert.equal(replayed.code, 2, replayed.err);
    const replay = JSON.parse(replayed.out) as {
      replayed: number;
      flipped: number;
      flips: {
        user: string;
        action: string;
        resource: { type: string; key?: string };
        before: { allow: boolean };
        after: { allow: boolean };
      }[];
    };
    const logged = CHECKS.length * 2 - CHECKS.filter((c) => c.user === "carol").length;
    assert.equal(replay.replayed, logged);
    const text2 = await cli(t, "replay", file, "--env", target, "--since", "1h");
    assert.equal(text2.code, 2, text2.err);
    assert.match(text2.out, /~ allow -> deny: ann delete document:d1/);
    assert.match(text2.out, / {2}document delete: 4 of \d+ flip \(4 -> deny, 0 -> allow\)/);

    const applied = await cli(t, "apply", file, "--env", target, "--revision", String(revision));
    assert.equal(applied.code, 0, applied.err);
    assert.match(applied.out, new RegExp(`as revision ${revision + 1}\\.`));
    assert.equal(await revisionOf(t), revision + 1, "one revision");

    // Decision by decision: a logged decision is listed exactly when /allowed answers differently now.
    const expected: string[] = [];
    for (const round of [1, 2]) {
      for (const check of CHECKS) {
        if (round === 2 && check.user === "carol") continue;
        const now = await allowed(t, check);
        if (now !== before.get(checkName(check)))
          expected.push(`${checkName(check)} ${before.get(checkName(check))} -> ${now}`);
      }
    }
    const listed = replay.flips.map(
      (f) =>
        `${f.user} ${f.action} ${f.resource.type}${f.resource.key ? `:${f.resource.key}` : ""} ${f.before.allow} -> ${f.after.allow}`,
    );
    assert.deepEqual(listed.sort(), expected.sort());
    assert.equal(replay.flipped, 6);
    assert.equal(await allowed(t, { user: "ann", action: "delete", resource: "document:d1" }), false);
    assert.equal(await allowed(t, { user: "bob", action: "read", resource: "document:d1" }), true);

    // Against the live environment the cases run through its PDP, on production's own facts (a file without
    // facts: in process, bob would be an unknown user).
    const live = join(dir, `${t.dialect}-live.yaml`);
    await writeFile(live, LIVE_TESTS);
    const onPdp = await cli(t, "test", live, "--env", target);
    assert.equal(onPdp.code, 1, onPdp.err);
    assert.match(
      onPdp.out,
      /FAIL admins still delete: expected allow, got deny\n {5}decision: .*NO_PERMISSION/,
    );
    assert.match(onPdp.out, /2 passed, 1 failed/);
    const withFacts = await cli(t, "test", tests, "--env", target);
    assert.equal(withFacts.code, 1);
    assert.match(withFacts.err, /through the environment's PDP on its own facts/);

    // The same plan again is stale now: 409, exit 1, nothing applied.
    const stale = await cli(t, "apply", file, "--env", target, "--revision", String(revision));
    assert.equal(stale.code, 1);
    assert.match(stale.err, /409 CONFLICT/);
    // Told to re-plan, it plans against production as it is (someone added a resource since) and applies.
    const added = await t.call(t.acme.adminKey, "POST", `/v2/schema/${target}/resources`, {
      key: "tag",
      name: "Tag",
      actions: { read: {} },
    });
    assert.equal(added.status, 200, added.body);
    const replanned = await cli(
      t,
      "apply",
      file,
      "--env",
      target,
      "--revision",
      String(revision),
      "--replan",
    );
    assert.equal(replanned.code, 0, replanned.err);
    assert.match(replanned.out, /changed since revision \d+: planned again and applied:\n- resource tag\n/);
    const tag = await t.call(t.acme.adminKey, "GET", `/v2/schema/${target}/resources/tag`);
    assert.equal(tag.status, 404, "the file has no tag resource: the re-plan deleted it");
  });

  test("errors exit 1 with line and field; an unreachable server and a missing key say so", async () => {
    const t = env();
    const file = join(dir, `${t.dialect}-bad.yaml`);
    await writeFile(file, "resources:\n  doc:\n    roles:\n      r:\n        permissions: [nope]\n");
    const bad = await cli(t, "plan", file, "--env", `${t.acme.projectId}/production`);
    assert.equal(bad.code, 1);
    assert.match(
      bad.err,
      /line 5, column \d+, resources\.doc\.roles\.r\.permissions\[0\]: unknown action 'nope'/,
    );
    const noKey = await policyCommand(["export", "--env", "a/b"], { env: {}, out: () => {}, err: () => {} });
    assert.equal(noKey, 1);
    let err = "";
    const away = await policyCommand(
      ["export", "--env", "a/b", "--url", "http://127.0.0.1:9", "--api-key", "x"],
      {
        env: {},
        out: () => {},
        err: (text) => (err += text),
      },
    );
    assert.equal(away, 1);
    assert.match(err, /cannot reach Gatehouse/);
  });
});
