import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { policyCommand } from "../../src/cli/policy.ts";
import { describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { startTestPdp, type TestPdp } from "../helpers/pdp.ts";

/**
 * What a CI pipeline does, through the CLI against a listening server: export production, edit the file (remove a
 * permission, add a derivation), plan (exit 2, exactly those changes), apply (one revision), and the PDP follows.
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
  const allowed = async (t: TestEnv, user: string, action: string, resource: string) => {
    const res = await t.call(t.acme.adminKey, "POST", `/v2/pdps/${t.acme.projectId}/production/allowed`, {
      user,
      action,
      resource,
    });
    assert.equal(res.status, 200, res.body);
    return res.json.allow as boolean;
  };

  before(async () => {
    const t = env();
    await t.app.listen({ host: "127.0.0.1", port: 0 });
    const address = t.app.server.address();
    url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    dir = await mkdtemp(join(tmpdir(), "gatehouse-policy-"));
    pdp = await startTestPdp(t);
    const ok = async (path: string, body: unknown) => {
      const res = await t.call(t.acme.adminKey, "POST", path, body);
      assert.ok(res.status < 300, `${path}: ${res.body}`);
    };
    const schema = `/v2/schema/${t.acme.projectId}/production`;
    const facts = `/v2/facts/${t.acme.projectId}/production`;
    await ok(`${schema}/resources`, {
      key: "folder",
      name: "Folder",
      actions: { read: {} },
      roles: { reader: { name: "Reader", permissions: ["read"] } },
    });
    await ok(`${schema}/resources`, {
      key: "document",
      name: "Document",
      actions: { read: {}, delete: {} },
      relations: { parent: "folder" },
      roles: { viewer: { name: "Viewer", permissions: ["read"] } },
    });
    await ok(`${schema}/roles`, {
      key: "admin",
      name: "Admin",
      permissions: ["document:read", "document:delete"],
    });
    await ok(`${facts}/tenants`, { key: "t1", name: "T1" });
    for (const key of ["ann", "bob"]) await ok(`${facts}/users`, { key });
    await ok(`${facts}/role_assignments`, { user: "ann", role: "admin", tenant: "t1" });
    await ok(`${facts}/resource_instances`, { key: "f1", resource: "folder", tenant: "t1" });
    await ok(`${facts}/resource_instances`, { key: "d1", resource: "document", tenant: "t1" });
    await ok(`${facts}/relationship_tuples`, {
      subject: "folder:f1",
      relation: "parent",
      object: "document:d1",
    });
    await ok(`${facts}/role_assignments`, {
      user: "bob",
      role: "reader",
      resource_instance: "folder:f1",
      tenant: "t1",
    });
  });

  after(async () => {
    await pdp?.close();
  });

  test("export → edit → plan exits 2 with exactly the edits → apply in one revision → the PDP follows", async () => {
    const t = env();
    const file = join(dir, `${t.dialect}.yaml`);
    const exported = await cli(t, "export", "--env", `${t.acme.projectId}/production`, "--out", file);
    assert.equal(exported.code, 0, exported.err);
    const text = await readFile(file, "utf8");
    const same = await cli(t, "plan", file, "--env", `${t.acme.projectId}/production`);
    assert.equal(same.code, 0, same.err);
    assert.match(same.out, /No changes/);

    assert.equal(await allowed(t, "ann", "delete", "document:d1"), true);
    assert.equal(await allowed(t, "bob", "read", "document:d1"), false);
    const edited = text
      .replace("      - document:delete\n", "")
      .replace(
        "        permissions:\n          - read\n    relations:",
        "        permissions:\n          - read\n        derived_from:\n          - role: reader\n" +
          "            on_resource: folder\n            linked_by_relation: parent\n    relations:",
      );
    assert.notEqual(edited, text);
    await writeFile(file, edited);
    const plan = await cli(t, "plan", file, "--env", `${t.acme.projectId}/production`);
    assert.equal(plan.code, 2, plan.err);
    assert.deepEqual(plan.out.trim().split("\n"), [
      "~ resource_role document:viewer (derived_from)",
      "~ role admin (permissions)",
      `Plan: 0 to create, 2 to change, 0 to delete (revision ${/revision (\d+)/.exec(plan.out)?.[1]}).`,
    ]);
    const revision = Number(/revision (\d+)/.exec(plan.out)?.[1]);

    const applied = await cli(
      t,
      "apply",
      file,
      "--env",
      `${t.acme.projectId}/production`,
      "--revision",
      String(revision),
    );
    assert.equal(applied.code, 0, applied.err);
    assert.match(applied.out, new RegExp(`as revision ${revision + 1}\\.`));
    assert.equal(await allowed(t, "ann", "delete", "document:d1"), false, "the removed permission");
    assert.equal(await allowed(t, "bob", "read", "document:d1"), true, "the added derivation");

    // The same plan again is stale now: 409, exit 1, nothing applied.
    const stale = await cli(
      t,
      "apply",
      file,
      "--env",
      `${t.acme.projectId}/production`,
      "--revision",
      String(revision),
    );
    assert.equal(stale.code, 1);
    assert.match(stale.err, /409 CONFLICT/);
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
