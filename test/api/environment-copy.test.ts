import { before, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { StoredChange } from "../../src/changes/feed.ts";
import { readChangesAfter } from "../helpers/changes.ts";
import { createEngine, type Change } from "../../src/pdp/engine/index.ts";
import { AppError } from "../../src/lib/errors.ts";
import { globMatch } from "../../src/modules/environment-copy/environment-copy.plan.ts";
import { describeEachDialect, PUBLIC_URL, type TestEnv } from "../helpers/app.ts";
import { policyOf, seedRichPolicy } from "../helpers/copy-policy.ts";
import { seedSchema } from "../helpers/seed-schema.ts";
import {
  documentResource,
  folderResource,
  postAdultsReadPublicDocs,
  postFolderPeople,
} from "../helpers/schema-api.ts";
import { validatePermitResponse } from "../helpers/permit-contract.ts";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Strings whose characters are counted as they are read by index, together; past `budget` reads they throw, so
 * a matcher that backtracks without bound fails at once instead of stalling the suite.
 */
function countedStrings(budget: number, ...strings: string[]): { texts: string[]; reads: () => number } {
  let reads = 0;
  const texts = strings.map(
    (s) =>
      new Proxy(new String(s), {
        get(target, prop) {
          if (typeof prop === "string" && /^\d+$/.test(prop) && ++reads > budget)
            throw new Error(`more than ${budget} character reads`);
          const value: unknown = Reflect.get(target, prop);
          return typeof value === "function" ? value.bind(target) : value;
        },
      }) as unknown as string,
  );
  return { texts, reads: () => reads };
}

test("scope patterns: `*` matches any run of characters, everything else literally, in at most |pattern|·|key| steps", () => {
  const cases: [string, string, boolean][] = [
    ["doc*", "document", true],
    ["doc*", "adoc", false],
    ["*docs", "secret_docs", true],
    ["a*b*c", "axxbyyc", true],
    ["a*b*c", "axxbyy", false],
    ["*", "", true],
    ["", "", true],
    ["a", "ab", false],
    ["a.c", "abc", false],
    ["us_[a]", "us_[a]", true],
  ];
  for (const [pattern, key, expected] of cases)
    assert.equal(globMatch(pattern, key), expected, `${pattern} ~ ${key}`);
  // A hostile pattern: a backtracking matcher tries every way to split the key among 120 stars.
  const [pattern, key] = [`${"*a".repeat(120)}b`, "a".repeat(255)];
  const counted = countedStrings(4 * (pattern.length + 1) * (key.length + 1), pattern, key);
  assert.equal(globMatch(counted.texts[0] as string, counted.texts[1] as string), false);
  assert.ok(counted.reads() > key.length, "the matcher read through the counter");
});

describeEachDialect("environment copy", (env) => {
  const envs = (t: TestEnv = env()) => `/v2/projects/${t.acme.projectId}/envs`;
  const source = (t: TestEnv = env()) => `${envs(t)}/${t.acme.envs.production}`;

  before(async () => {
    const t = env();
    await seedRichPolicy(t.store.db, t.acme.envs.production);
    // the other organization's environment holds a policy too, so a leak would show
    await seedRichPolicy(t.store.db, t.globex.envs.production);
    t.app.taskRunner.start();
  });

  const envIdOf = async (key: string): Promise<string | undefined> =>
    (
      await env()
        .store.db.selectFrom("environments")
        .select("id")
        .where("project_id", "=", env().acme.projectId)
        .where("key", "=", key)
        .executeTakeFirst()
    )?.id;

  const createEnv = async (key: string): Promise<string> => {
    const res = await env().call(env().acme.adminKey, "POST", envs(), { key, name: key });
    assert.equal(res.status, 200, res.body);
    return res.json.id;
  };

  const taskCount = async () =>
    Number(
      (
        await env()
          .store.db.selectFrom("tasks")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );

  test("async copy: 202 with a processing task, then success with a new environment holding the same policy", async () => {
    const { call, acme, store } = env();
    const res = await call(acme.adminKey, "POST", `${source()}/copy/async`, {
      target_env: { new: { key: "staging", name: "Staging", description: "copied" } },
    });
    assert.equal(res.status, 202, res.body);
    assert.match(res.json.task_id, UUID_RE);
    assert.deepEqual(
      { status: res.json.status, result: res.json.result, error: res.json.error },
      { status: "processing", result: null, error: null },
    );
    assert.equal(typeof res.json.progress, "number");

    const done = await call(
      acme.adminKey,
      "GET",
      `${source()}/copy/async/${res.json.task_id}/result?wait=30`,
    );
    assert.equal(done.status, 200);
    assert.equal(done.json.status, "success", done.body);
    assert.equal(done.json.error, null);
    assert.equal(done.json.progress, 100);
    assert.equal(done.json.result.key, "staging");
    assert.equal(done.json.result.name, "Staging");
    assert.equal(done.json.result.description, "copied");
    assert.equal(done.json.result.project_id, acme.projectId);
    const targetId = done.json.result.id;
    assert.deepEqual(await policyOf(store.db, targetId), await policyOf(store.db, acme.envs.production));
    // a new environment as every environment starts: its default tenant and its own key; no facts copied
    const tenants = await call(acme.adminKey, "GET", `/v2/facts/${acme.projectId}/${targetId}/tenants`);
    assert.deepEqual(
      tenants.json.map((t: { key: string }) => t.key),
      ["default"],
    );
    const key = await call(acme.adminKey, "GET", `/v2/api-key/${acme.projectId}/${targetId}`);
    assert.equal(key.status, 200);
    assert.equal(key.json.environment_id, targetId);
    // the source is untouched
    assert.equal((await call(acme.adminKey, "GET", `${source()}`)).json.key, "production");
  });

  test("a PDP engine fed the copy's change feed decides every check as one fed the source's", async () => {
    const { call, acme, store } = env();
    const key = acme.adminKey;
    const ok = async (method: "POST" | "PUT", url: string, body: unknown) => {
      const res = await call(key, method, url, body);
      assert.ok(res.status >= 200 && res.status < 300, `${method} ${url} -> ${res.status} ${res.body}`);
      return res;
    };
    // The source's policy is built through the API, as a user would; it uses every part the engine reads.
    const srcId = (await ok("POST", envs(), { key: "engine-source", name: "Engine source" })).json.id;
    const S = `/v2/schema/${acme.projectId}/${srcId}`;
    const F = `/v2/facts/${acme.projectId}/${srcId}`;
    await ok(
      "POST",
      `${S}/resources`,
      folderResource(["read", "write"], {
        viewer: { name: "Viewer", permissions: ["read"] },
        editor: { name: "Editor", permissions: ["write"], extends: ["viewer"] },
      }),
    );
    await ok("POST", `${S}/resources`, { ...documentResource(), attributes: { public: { type: "bool" } } });
    await ok("POST", `${S}/roles`, { key: "viewer", name: "Viewer", permissions: ["document:read"] });
    await ok("POST", `${S}/roles`, {
      key: "admin",
      name: "Admin",
      permissions: ["document:write", "document:delete", "folder:write"],
      extends: ["viewer"],
    });
    await postAdultsReadPublicDocs(ok, S, F);
    await postFolderPeople(ok, F);

    const copied = await call(key, "POST", `${envs()}/${srcId}/copy`, {
      target_env: { new: { key: "engine-target", name: "Engine target" } },
    });
    assert.equal(copied.status, 201, copied.body);

    // Two engines fed as a PDP feeds them: change records, in order. Facts are not copied, so the target's engine
    // also gets the source's fact records: both then hold the same users, tenants, assignments and tuples.
    const feed = async (environmentId: string) => readChangesAfter(store.db, environmentId, 0, 1_000_000);
    const sourceFeed = await feed(srcId);
    const factKinds = new Set([
      "user",
      "tenant",
      "role_assignment",
      "resource_instance",
      "relationship_tuple",
    ]);
    const fed = (changes: StoredChange[]) => {
      const engine = createEngine();
      for (const { kind, op, data } of changes) engine.apply({ kind, op, data } as Change);
      return engine;
    };
    const source = fed(sourceFeed);
    const target = fed([...(await feed(copied.json.id)), ...sourceFeed.filter((c) => factKinds.has(c.kind))]);

    const users = [
      { key: "alice" },
      { key: "bob" },
      { key: "carol" },
      { key: "dave" },
      { key: "dave", attributes: { age: 12 } },
      { key: "erin" },
    ];
    const resources = [
      { type: "document", tenant: "t1" },
      { type: "document", tenant: "t2" },
      { type: "document", key: "d1", tenant: "t1" },
      { type: "document", key: "d2", tenant: "t1" },
      { type: "document", tenant: "t1", attributes: { public: true } },
      { type: "document", tenant: "t1", attributes: { public: false } },
      { type: "folder", key: "f1", tenant: "t1" },
      { type: "folder", tenant: "t2" },
      { type: "invoice", tenant: "t1" },
    ];
    const checks = users.flatMap((user) =>
      ["read", "write", "delete", "fly"].flatMap((action) =>
        resources.map((resource) => ({ user, action, resource })),
      ),
    );
    const differences = checks
      .map((query) => ({ query, source: source.check(query), target: target.check(query) }))
      .filter((d) => JSON.stringify(d.source) !== JSON.stringify(d.target));
    assert.deepEqual(differences, [], "checks the copy decides differently from its source");
    // The grid reaches every kind of grant, so a part the copy dropped would change some decision.
    const allowed = checks.map((q) => source.check(q)).filter((d) => d.allow);
    assert.deepEqual([...new Set(allowed.map((d) => d.reason.kind))].sort(), ["abac", "rbac", "rebac"]);
    assert.ok(allowed.length < checks.length, "and some checks are denied");
  });

  test("synchronous copy answers 201 with the target environment (Permit's EnvironmentRead)", async () => {
    const { call, acme, store } = env();
    const res = await call(acme.adminKey, "POST", `${source()}/copy`, {
      target_env: { new: { key: "qa", name: "QA" } },
    });
    assert.equal(res.status, 201, res.body);
    assert.deepEqual(
      validatePermitResponse("post", "/v2/projects/{proj_id}/envs/{env_id}/copy", 201, res.json),
      [],
    );
    assert.equal(res.json.key, "qa");
    assert.ok(Number(res.headers["x-gatehouse-revision"]) > 0);
    assert.deepEqual(await policyOf(store.db, res.json.id), await policyOf(store.db, acme.envs.production));
    // a taken key: 409, nothing written
    const again = await call(acme.adminKey, "POST", `${source()}/copy`, {
      target_env: { new: { key: "qa", name: "QA" } },
    });
    assert.equal(again.status, 409);
    assert.equal(again.json.error_code, "DUPLICATE_ENTITY");
  });

  test("wait: 200 with the finished task as soon as it finishes; 202 no later than the bound when it does not", async () => {
    const { call, acme, app } = env();
    // Durations are compared with the bounds asked for, with wide margins: a busy machine is slow, not wrong.
    const started = Date.now();
    const fast = await call(acme.adminKey, "POST", `${source()}/copy/async?wait=60`, {
      target_env: { new: { key: "waited", name: "Waited" } },
    });
    assert.equal(fast.status, 200, fast.body);
    assert.equal(fast.json.status, "success");
    assert.ok(Date.now() - started < 30_000, "answered when the task finished, not at the 60 s bound");

    // Without a worker the task stays processing: each wait ends at its bound.
    await app.taskRunner.stop();
    try {
      let t0 = Date.now();
      const slow = await call(acme.adminKey, "POST", `${source()}/copy/async?wait=1`, {
        target_env: { new: { key: "unworked", name: "Unworked" } },
      });
      let elapsed = Date.now() - t0;
      assert.equal(slow.status, 202);
      assert.equal(slow.json.status, "processing");
      assert.ok(elapsed >= 990, `waited the whole bound: ${elapsed} ms for wait=1`);
      assert.ok(elapsed < 30_000, `and not much longer: ${elapsed} ms for wait=1`);
      t0 = Date.now();
      const read = await call(
        acme.adminKey,
        "GET",
        `${source()}/copy/async/${slow.json.task_id}/result?wait=2`,
      );
      elapsed = Date.now() - t0;
      assert.equal(read.status, 200);
      assert.deepEqual(
        {
          status: read.json.status,
          result: read.json.result,
          error: read.json.error,
          progress: read.json.progress,
        },
        { status: "processing", result: null, error: null, progress: 0 },
      );
      assert.ok(elapsed >= 1990, `waited the whole bound: ${elapsed} ms for wait=2`);
      assert.ok(elapsed < 30_000, `and not much longer: ${elapsed} ms for wait=2`);
      t0 = Date.now();
      const now = await call(acme.adminKey, "GET", `${source()}/copy/async/${slow.json.task_id}/result`);
      assert.equal(now.json.status, "processing");
      assert.ok(Date.now() - t0 < 30_000, "wait=0 does not wait for the task");
      assert.equal(await envIdOf("unworked"), undefined);
    } finally {
      app.taskRunner.start();
    }
  });

  test("wait must be an integer from 0 to 60", async () => {
    const { call, acme } = env();
    const before = await taskCount();
    for (const wait of ["-1", "1.5", "abc", "61", "1e9"]) {
      const res = await call(acme.adminKey, "POST", `${source()}/copy/async?wait=${wait}`, {
        target_env: { new: { key: "never", name: "Never" } },
      });
      assert.equal(res.status, 422, `wait=${wait}`);
      assert.equal(res.json.error_code, "INVALID_INPUT");
      assert.deepEqual(res.json.detail[0].loc, ["query", "wait"]);
      const read = await call(
        acme.adminKey,
        "GET",
        `${source()}/copy/async/${randomUUID()}/result?wait=${wait}`,
      );
      assert.equal(read.status, 422, `wait=${wait}`);
    }
    assert.equal(await taskCount(), before, "a rejected request creates no task");
    const max = await call(acme.adminKey, "POST", `${source()}/copy/async?wait=60`, {
      target_env: { new: { key: "max-wait", name: "Max wait" } },
    });
    assert.equal(max.status, 200);
    assert.equal(max.json.status, "success");
  });

  test("a missing target fails the task with the task error object (NOT_FOUND); reading it is 200", async () => {
    const { call, acme } = env();
    const res = await call(acme.adminKey, "POST", `${source()}/copy/async`, {
      target_env: { existing: "no-such-env" },
    });
    assert.equal(res.status, 202);
    const done = await call(
      acme.adminKey,
      "GET",
      `${source()}/copy/async/${res.json.task_id}/result?wait=30`,
    );
    assert.equal(done.status, 200);
    assert.equal(done.json.status, "failed");
    assert.equal(done.json.result, null);
    const error = done.json.error;
    assert.equal(error.error_code, "NOT_FOUND");
    assert.match(error.id, UUID_RE);
    assert.equal(typeof error.title, "string");
    assert.match(error.message, /no-such-env/);
    assert.ok(error.support_link.startsWith(`${PUBLIC_URL}/`));
    assert.deepEqual(Object.keys(error).sort(), [
      "additional_info",
      "error_code",
      "id",
      "message",
      "support_link",
      "title",
    ]);
  });

  test("a missing source: the copy handler fails with NOT_FOUND; a deleted source takes its tasks along", async () => {
    const { call, acme, app } = env();
    const handler = app.tasks.registry.get("environment_copy");
    assert.ok(handler);
    const context = {
      task: { environment_id: randomUUID() },
      params: {
        target_env: { new: { key: "orphan", name: "Orphan" } },
        conflict_strategy: "fail",
        scope: {},
      },
      signal: new AbortController().signal,
      progress: async () => {},
      succeedWithin: async () => {},
    };
    await assert.rejects(
      handler(context as unknown as Parameters<typeof handler>[0]),
      (e: unknown) => e instanceof AppError && e.code === "NOT_FOUND" && /source environment/.test(e.message),
    );
    assert.equal(await envIdOf("orphan"), undefined);

    const doomed = await createEnv("doomed");
    await app.taskRunner.stop();
    try {
      const res = await call(acme.adminKey, "POST", `${envs()}/${doomed}/copy/async`, {
        target_env: { new: { key: "from-doomed", name: "From doomed" } },
      });
      assert.equal(res.status, 202);
      assert.equal((await call(acme.adminKey, "DELETE", `${envs()}/${doomed}`)).status, 204);
      const read = await call(
        acme.adminKey,
        "GET",
        `${envs()}/${doomed}/copy/async/${res.json.task_id}/result`,
      );
      assert.equal(read.status, 404);
    } finally {
      app.taskRunner.start();
    }
  });

  test("conflict_strategy fail: a key taken in the existing target fails the copy and writes nothing", async () => {
    const { call, acme, store } = env();
    const target = await createEnv("conflict-fail");
    await seedSchema(store.db, target, {
      resources: { document: { actions: ["archive"] }, invoice: { actions: ["pay"] } },
      tenantRoles: { viewer: ["invoice:pay"] },
    });
    const before = await policyOf(store.db, target);
    const revision = (
      await store.db
        .selectFrom("environments")
        .select("revision")
        .where("id", "=", target)
        .executeTakeFirstOrThrow()
    ).revision;

    const sync = await call(acme.adminKey, "POST", `${source()}/copy`, {
      target_env: { existing: "conflict-fail" },
    });
    assert.equal(sync.status, 409, sync.body);
    assert.equal(sync.json.error_code, "DUPLICATE_ENTITY");
    assert.deepEqual(sync.json.additional_info.conflicts, {
      resources: ["document"],
      roles: ["viewer"],
      condition_sets: [],
    });

    const async = await call(acme.adminKey, "POST", `${source()}/copy/async?wait=30`, {
      target_env: { existing: target },
      conflict_strategy: "fail",
    });
    assert.equal(async.status, 200);
    assert.equal(async.json.status, "failed");
    assert.equal(async.json.error.error_code, "DUPLICATE_ENTITY");
    assert.match(async.json.error.message, /resource 'document'/);

    assert.deepEqual(await policyOf(store.db, target), before);
    const after = (
      await store.db
        .selectFrom("environments")
        .select("revision")
        .where("id", "=", target)
        .executeTakeFirstOrThrow()
    ).revision;
    assert.equal(after, revision, "no change record either");
  });

  test("conflict_strategy overwrite: conflicting objects become the source's and keep their ids; the rest stays", async () => {
    const { call, acme, store } = env();
    const target = await createEnv("conflict-overwrite");
    const seeded = await seedSchema(store.db, target, {
      resources: {
        document: { actions: ["read", "archive"], roles: { viewer: ["archive"], janitor: ["archive"] } },
        invoice: { actions: ["pay"] },
      },
      tenantRoles: { viewer: ["invoice:pay"], billing: ["invoice:pay"] },
    });
    // facts naming the conflicting objects: they survive because the objects keep their ids
    const user = await call(acme.adminKey, "POST", `/v2/facts/${acme.projectId}/${target}/users`, {
      key: "ann",
    });
    assert.equal(user.status, 201, user.body);
    const assigned = await call(
      acme.adminKey,
      "POST",
      `/v2/facts/${acme.projectId}/${target}/role_assignments`,
      {
        user: "ann",
        role: "viewer",
        tenant: "default",
      },
    );
    assert.equal(assigned.status, 200, assigned.body);

    const res = await call(acme.adminKey, "POST", `${source()}/copy`, {
      target_env: { existing: "conflict-overwrite" },
      conflict_strategy: "overwrite",
    });
    assert.equal(res.status, 201, res.body);
    assert.equal(res.json.id, target);

    const got = await policyOf(store.db, target);
    const src = await policyOf(store.db, acme.envs.production);
    // everything of the source is there, exactly
    for (const [kind, lines] of Object.entries(src)) {
      for (const line of lines) assert.ok(got[kind]?.includes(line), `${kind}: ${line}`);
    }
    // the conflicting resource and tenant role are the source's now: their extra parts are gone
    assert.deepEqual(
      got["actions"]?.filter((l) => l.startsWith("document:")),
      src["actions"]?.filter((l) => l.startsWith("document:")),
    );
    assert.ok(!got["roles"]?.some((l) => l.startsWith("document#janitor")));
    assert.deepEqual(
      got["permissions"]?.filter((l) => l.startsWith("#viewer|")),
      src["permissions"]?.filter((l) => l.startsWith("#viewer|")),
    );
    // what only the target had is untouched
    assert.ok(got["resources"]?.some((l) => l.startsWith("invoice|")));
    assert.ok(got["permissions"]?.includes("#billing|invoice:pay"));
    const ids = await store.db
      .selectFrom("resources")
      .select(["id", "key"])
      .where("environment_id", "=", target)
      .execute();
    assert.equal(ids.find((r) => r.key === "document")?.id, seeded.resources["document"]);
    const assignments = await call(
      acme.adminKey,
      "GET",
      `/v2/facts/${acme.projectId}/${target}/role_assignments`,
    );
    assert.deepEqual(
      assignments.json.map((a: { user: string; role: string }) => `${a.user}:${a.role}`),
      ["ann:viewer"],
    );
  });

  test("scope include/exclude picks what is copied; references to what is left out are dropped", async () => {
    const { call, acme, store } = env();
    const res = await call(acme.adminKey, "POST", `${source()}/copy`, {
      target_env: { new: { key: "scoped", name: "Scoped" } },
      scope: {
        resources: { include: ["doc*"] },
        roles: { exclude: ["admin"] },
        user_sets: { include: ["us_*", "eu_*"], exclude: ["eu_*"] },
        resource_sets: { include: ["*docs"] },
        custom_policies: { include: ["ignored"] },
      },
    });
    assert.equal(res.status, 201, res.body);
    const got = await policyOf(store.db, res.json.id);
    // The built-in resources come with every environment, whatever the scope.
    assert.deepEqual(
      got["resources"]?.map((l) => l.split("|")[0]),
      ["__tenant", "__user", "document"],
    );
    assert.deepEqual(got["roles"], [
      "#auditor|auditor|∅|∅|0",
      "#viewer|viewer|∅|∅|0",
      'document#editor|editor|edits|{"level":2}|1',
      "document#viewer|viewer|∅|∅|0",
    ]);
    // folder is not copied: the relation to it and the derivations through it cannot exist
    assert.deepEqual(got["relations"], []);
    assert.deepEqual(got["derivations"], []);
    assert.deepEqual(
      got["extends"],
      ["document#editor|document#viewer"],
      "admin (and its parent link) is left out",
    );
    assert.deepEqual(
      got["permissions"]?.filter((l) => l.startsWith("#")),
      ["#viewer|document:read"],
    );
    assert.deepEqual(
      got["condition_sets"]?.map((l) => l.split("|")[0]),
      ["secret_docs", "us_users"],
    );
    assert.deepEqual(got["condition_set_rules"], [
      "us_users_document_read_secret_docs|us_users|document:read|secret_docs",
    ]);
  });

  test("a scoped copy into an existing environment links references to the target's objects of the same key", async () => {
    const { call, acme, store } = env();
    const target = await createEnv("linked");
    await seedSchema(store.db, target, { resources: { folder: { actions: ["read", "create"] } } });
    const res = await call(acme.adminKey, "POST", `${source()}/copy`, {
      target_env: { existing: target },
      scope: {
        resources: { include: ["document"] },
        roles: { include: ["admin"] },
        user_sets: { exclude: ["*"] },
        resource_sets: { exclude: ["*"] },
      },
    });
    assert.equal(res.status, 201, res.body);
    const got = await policyOf(store.db, target);
    // the relation's subject and the tenant role's folder permission resolve to the target's own folder
    assert.deepEqual(got["relations"], ["document#parent|parent|∅|folder"]);
    assert.ok(got["permissions"]?.includes("#admin|folder:read"));
    // admin extends viewer, which is neither copied nor in the target
    assert.deepEqual(got["extends"], ["document#editor|document#viewer"]);
    // derivations from folder roles: the target's folder has no roles
    assert.deepEqual(got["derivations"], []);
  });

  test("request checks: exactly one target, not the source itself, no unknown fields (422, no task)", async () => {
    const { call, acme } = env();
    const before = await taskCount();
    const bodies: unknown[] = [
      { target_env: {} },
      { target_env: { new: { key: "x1", name: "X" }, existing: "development" } },
      { target_env: { existing: "production" } },
      { target_env: { existing: acme.envs.production } },
      { target_env: { new: { key: "x2", name: "X" } }, conflict_strategy: "merge" },
      { target_env: { new: { key: "x3", name: "X" } }, scope: { users: {} } },
      { target_env: { new: { key: "bad key", name: "X" } } },
      {},
    ];
    for (const body of bodies) {
      for (const path of ["copy", "copy/async"]) {
        const res = await call(acme.adminKey, "POST", `${source()}/${path}`, body);
        assert.equal(res.status, 422, `${path} ${JSON.stringify(body)}: ${res.body}`);
        assert.equal(res.json.error_code, "INVALID_INPUT");
      }
    }
    assert.equal(await taskCount(), before);
    for (const key of ["x1", "x2", "x3"]) assert.equal(await envIdOf(key), undefined);
  });

  test("access: project or organization keys copy; environment keys get 403; tasks stay under their source", async () => {
    const { call, acme, globex } = env();
    const envKey = async (envId: string) =>
      (await call(acme.adminKey, "GET", `/v2/api-key/${acme.projectId}/${envId}`)).json.secret as string;
    const prodKey = await envKey(acme.envs.production);
    const devKey = await envKey(acme.envs.development);
    const body = { target_env: { new: { key: "by-env-key", name: "By env key" } } };

    const task = await call(acme.adminKey, "POST", `${source()}/copy/async`, {
      target_env: { new: { key: "access", name: "Access" } },
    });
    assert.equal(task.status, 202);
    const resultPath = `copy/async/${task.json.task_id}/result`;

    // an environment key of another environment: 403 for everything
    assert.equal((await call(devKey, "POST", `${source()}/copy/async`, body)).status, 403);
    assert.equal((await call(devKey, "POST", `${source()}/copy`, body)).status, 403);
    const forbidden = await call(devKey, "GET", `${source()}/${resultPath}`);
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.json.error_code, "FORBIDDEN_ACCESS");
    // the source's own environment key reads its tasks but cannot create environments
    assert.equal((await call(prodKey, "GET", `${source()}/${resultPath}`)).status, 200);
    assert.equal((await call(prodKey, "POST", `${source()}/copy/async`, body)).status, 403);
    // a task id under another environment does not exist there
    const elsewhere = await call(acme.adminKey, "GET", `${envs()}/${acme.envs.development}/${resultPath}`);
    assert.equal(elsewhere.status, 404);
    assert.equal((await call(devKey, "GET", `${envs()}/${acme.envs.development}/${resultPath}`)).status, 404);
    assert.equal((await call(acme.adminKey, "GET", `${source()}/copy/async/not-a-uuid/result`)).status, 404);
    assert.equal(
      (await call(acme.adminKey, "GET", `${source()}/copy/async/${randomUUID()}/result`)).status,
      404,
    );
    // another organization sees nothing
    assert.equal((await call(globex.adminKey, "GET", `${source()}/${resultPath}`)).status, 404);
    assert.equal((await call(globex.adminKey, "POST", `${source()}/copy/async`, body)).status, 404);
    assert.equal(await envIdOf("by-env-key"), undefined);
  });
});
