// What Permit's other SDKs send, pinned: `null` for an optional field (the Python SDK sends one for every unset
// argument) is the same as leaving the field out, on every write route of the OpenAPI document.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describeEachDialect } from "../helpers/app.ts";
import { REPO_ROOT } from "../helpers/process.ts";
import { startTestPdp } from "../helpers/pdp.ts";

type Schema = Record<string, unknown>;
type Operation = { requestBody?: { content?: Record<string, { schema?: Schema }> } };
const doc = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "docs/openapi.json"), "utf8")) as {
  paths: Record<string, Record<string, Operation>>;
};

const F = "/v2/facts/default/production";

let fresh = 0;
/** A value unused so far that fits every string pattern of the document (keys, regions, emails' local parts). */
const unique = () => `wire${++fresh}`;

/** A message with the generated values taken out, so that two answers' reasons compare. */
const unnamed = (message: unknown) => String(message).replace(/wire\d+/g, "wire");

const branchesOf = (s: Schema) => (s["anyOf"] ?? s["oneOf"]) as Schema[] | undefined;

/** A value the schema accepts, with required properties only. */
function sample(s: Schema): unknown {
  const branches = branchesOf(s);
  if (branches) return sample(branches.find((b) => b["type"] !== "null") ?? branches[0]!);
  if ("const" in s) return s["const"];
  if (Array.isArray(s["enum"])) return s["enum"][0];
  switch (s["type"]) {
    case "object": {
      const props = (s["properties"] ?? {}) as Record<string, Schema>;
      const required = (s["required"] ?? []) as string[];
      return Object.fromEntries(required.map((k) => [k, sample(props[k]!)]));
    }
    case "array":
      return Array.from({ length: Number(s["minItems"] ?? 0) }, () => sample(s["items"] as Schema));
    case "string":
      if (s["format"] === "email") return `${unique()}@example.com`;
      if (s["format"] === "uuid") return crypto.randomUUID();
      if (s["format"] === "date-time") return "2099-01-01T00:00:00Z";
      return unique();
    case "integer":
    case "number":
      return Math.max(Number(s["minimum"] ?? 1), 1);
    case "boolean":
      return false;
    default:
      return {};
  }
}

/** The paths (property names, `[]` for array items) of every optional property, up to a few levels deep. */
function optionalPaths(s: Schema, prefix: string[] = []): string[][] {
  if (prefix.length > 4) return [];
  const branches = branchesOf(s);
  if (branches) return branches.flatMap((b) => optionalPaths(b, prefix));
  if (s["type"] === "array" && s["items"]) return optionalPaths(s["items"] as Schema, [...prefix, "[]"]);
  const props = (s["properties"] ?? {}) as Record<string, Schema>;
  const required = new Set((s["required"] ?? []) as string[]);
  return Object.entries(props).flatMap(([k, sub]) => [
    ...(required.has(k) ? [] : [[...prefix, k]]),
    ...optionalPaths(sub, [...prefix, k]),
  ]);
}

/** A body with required properties only, plus what leads to `at`, whose last property is null or left out. */
function bodyWith(s: Schema, at: string[], leaf: "null" | "omitted"): unknown {
  const [head, ...rest] = at;
  if (head === undefined) return sample(s);
  const branches = branchesOf(s);
  if (branches) {
    const fits = (b: Schema) =>
      head === "[]" ? b["type"] === "array" : Object.hasOwn((b["properties"] ?? {}) as object, head);
    return bodyWith(branches.find(fits) ?? branches[0]!, at, leaf);
  }
  if (head === "[]") return [bodyWith(s["items"] as Schema, rest, leaf)];
  const out = sample(s) as Record<string, unknown>;
  const sub = ((s["properties"] ?? {}) as Record<string, Schema>)[head]!;
  if (rest.length > 0) out[head] = bodyWith(sub, rest, leaf);
  else if (leaf === "null") out[head] = null;
  else delete out[head];
  return out;
}

/** Every POST, PUT and PATCH of /v2 with a JSON body. */
const writes = Object.entries(doc.paths).flatMap(([template, ops]) =>
  ["post", "put", "patch"].flatMap((method) => {
    const schema = ops[method]?.requestBody?.content?.["application/json"]?.schema;
    return template.startsWith("/v2/") && schema ? [{ method: method.toUpperCase(), template, schema }] : [];
  }),
);

test("the document has write routes with optional fields to try", () => {
  assert.ok(writes.length > 40, `${writes.length} write routes`);
  assert.ok(writes.reduce((n, w) => n + optionalPaths(w.schema).length, 0) > 100);
});

describeEachDialect("null for an optional field is the same as leaving it out", (env) => {
  test("every optional property of every write route's body, at every depth", async () => {
    const { acme, call } = env();
    // The seeded project and environment, so that requests get past the scope checks to validation; other ids
    // are new (a 404 after validation is as good as a 2xx here).
    const fill = (template: string) =>
      template.replace(/\{([^}]+)\}/g, (_m, name: string) =>
        name === "proj_id" ? "default" : name === "env_id" ? "production" : unique(),
      );
    const failures: string[] = [];
    let validated = 0;
    for (const { method, template, schema } of writes) {
      for (const at of optionalPaths(schema)) {
        const field = at.join(".").replaceAll(".[]", "[]");
        const omitted = await call(
          acme.adminKey,
          method as "POST",
          fill(template),
          bodyWith(schema, at, "omitted"),
        );
        const nulled = await call(
          acme.adminKey,
          method as "POST",
          fill(template),
          bodyWith(schema, at, "null"),
        );
        const where = `${method} ${template} ${field}: null -> ${nulled.status} ${nulled.body.slice(0, 200)}; omitted -> ${omitted.status}`;
        if (Math.floor(nulled.status / 100) !== Math.floor(omitted.status / 100)) failures.push(where);
        else if (nulled.status === 422 && unnamed(nulled.json?.message) !== unnamed(omitted.json?.message))
          failures.push(where);
        if (omitted.status !== 401 && omitted.status !== 403) validated++;
      }
    }
    assert.deepEqual(failures, []);
    // Most pairs reach validation (the rest are routes of sessions or another level of key).
    assert.ok(validated > 150, `${validated} pairs validated`);
  });

  test("the Python SDK's assign_role: resource_instance null is a tenant-wide assignment", async () => {
    const { acme, call } = env();
    const S = "/v2/schema/default/production";
    for (const [url, body] of [
      [`${S}/resources`, { key: "doc", name: "Doc", actions: { read: {} } }],
      [`${S}/roles`, { key: "reader", name: "Reader", permissions: ["doc:read"] }],
      [`${F}/users`, { key: "py-user", email: null, first_name: null, attributes: null }],
    ] as const) {
      const res = await call(acme.adminKey, "POST", url, body);
      assert.ok(res.status < 300, `${url}: ${res.status} ${res.body}`);
    }
    const assigned = await call(acme.adminKey, "POST", `${F}/users/py-user/roles`, {
      role: "reader",
      tenant: "default",
      resource_instance: null,
    });
    assert.ok(assigned.status < 300, assigned.body);
    assert.equal(assigned.json.resource_instance ?? null, null);
    const user = await call(acme.adminKey, "GET", `${F}/users/py-user`);
    assert.equal(user.json.email ?? null, null);
    // A required field stays required: null is not a value for it.
    const noRole = await call(acme.adminKey, "POST", `${F}/users/py-user/roles`, {
      role: null,
      tenant: "default",
    });
    assert.equal(noRole.status, 422);
    assert.match(noRole.json.message, /role/);
  });

  test("on an update, null leaves the field as it was; a field documented as nullable is cleared by null", async () => {
    const { acme, call } = env();
    const created = await call(acme.adminKey, "POST", `${F}/users`, {
      key: "keeps",
      email: "keeps@example.com",
      first_name: "Kept",
    });
    assert.ok(created.status < 300, created.body);
    const patched = await call(acme.adminKey, "PATCH", `${F}/users/keeps`, {
      email: null,
      first_name: "New",
    });
    assert.equal(patched.status, 200, patched.body);
    assert.equal(patched.json.email, "keeps@example.com");
    assert.equal(patched.json.first_name, "New");

    const CS = "/v2/schema/default/production/condition_sets";
    for (const body of [
      { key: "parent-set", name: "Parent" },
      { key: "child-set", name: "Child", parent_id: "parent-set", description: null },
    ]) {
      const res = await call(acme.adminKey, "POST", CS, body);
      assert.ok(res.status < 300, res.body);
    }
    const renamed = await call(acme.adminKey, "PATCH", `${CS}/child-set`, {
      name: "Renamed",
      description: null,
    });
    assert.equal(renamed.status, 200, renamed.body);
    assert.ok(renamed.json.parent_id, "a null description leaves the parent alone");
    const orphaned = await call(acme.adminKey, "PATCH", `${CS}/child-set`, { parent_id: null });
    assert.equal(orphaned.status, 200, orphaned.body);
    assert.equal(orphaned.json.parent_id ?? null, null);
  });
});

describeEachDialect("the built-in resources are there from an environment's creation", (env) => {
  const P = "/v2/projects";

  test("a new environment: __user and __tenant readable, their attributes writable, hidden from plain lists", async () => {
    const { acme, call } = env();
    const created = await call(acme.adminKey, "POST", `${P}/default/envs`, { key: "fresh", name: "Fresh" });
    assert.equal(created.status, 200, created.body);
    const S = "/v2/schema/default/fresh";
    // Permit's own ABAC e2e test and the Python SDK declare user attributes this way.
    const age = await call(acme.adminKey, "POST", `${S}/resources/__user/attributes`, {
      key: "age",
      type: "number",
    });
    assert.equal(age.status, 200, age.body);
    assert.equal(age.json.resource_key, "__user");
    const tier = await call(acme.adminKey, "POST", `${S}/resources/__tenant/attributes`, {
      key: "tier",
      type: "string",
    });
    assert.equal(tier.status, 200, tier.body);
    const userAttributes = await call(acme.adminKey, "GET", `${S}/users/attributes`);
    assert.deepEqual(
      userAttributes.json.map((a: { key: string }) => a.key),
      ["age"],
    );
    for (const key of ["__user", "__tenant"]) {
      const read = await call(acme.adminKey, "GET", `${S}/resources/${key}`);
      assert.equal(read.status, 200, read.body);
      assert.deepEqual(read.json.actions, {});
    }
    const plain = await call(acme.adminKey, "GET", `${S}/resources`);
    assert.deepEqual(plain.json, []);
    const all = await call(acme.adminKey, "GET", `${S}/resources?include_built_in=true`);
    assert.deepEqual(all.json.map((r: { key: string }) => r.key).sort(), ["__tenant", "__user"]);

    // Gatehouse manages them: not deleted, not changed but for their attributes.
    for (const [method, url, body] of [
      ["DELETE", `${S}/resources/__user`, undefined],
      ["DELETE", `${S}/resources/__tenant`, undefined],
      ["PATCH", `${S}/resources/__user`, { name: "People" }],
    ] as const) {
      const refused = await call(acme.adminKey, method, url, body);
      assert.equal(refused.status, 422, `${method} ${url}: ${refused.body}`);
      assert.match(refused.json.message, /built in/);
    }
    const still = await call(acme.adminKey, "GET", `${S}/resources?include_built_in=true`);
    assert.equal(still.json.length, 2);
  });

  test("every way an environment is made: a project's default environments and a copy's new target", async () => {
    const { acme, call } = env();
    const project = await call(acme.adminKey, "POST", P, { key: "builtins", name: "Built-ins" });
    assert.equal(project.status, 200, project.body);
    for (const e of ["production", "development"]) {
      const res = await call(acme.adminKey, "POST", `/v2/schema/builtins/${e}/users/attributes`, {
        key: "dept",
        type: "string",
      });
      assert.equal(res.status, 200, res.body);
    }
    const copy = await call(acme.adminKey, "POST", `${P}/builtins/envs/production/copy`, {
      target_env: { new: { key: "copied", name: "Copied" } },
    });
    assert.equal(copy.status, 201, copy.body);
    // The copy merges the source's user attributes into the target's own built-in resource.
    const copied = await call(
      acme.adminKey,
      "GET",
      "/v2/schema/builtins/copied/resources?include_built_in=true",
    );
    assert.deepEqual(copied.json.map((r: { key: string }) => r.key).sort(), ["__tenant", "__user"]);
    const attrs = await call(acme.adminKey, "GET", "/v2/schema/builtins/copied/users/attributes");
    assert.deepEqual(
      attrs.json.map((a: { key: string }) => a.key),
      ["dept"],
    );
    // Into an existing environment, too: built-ins on both sides are no conflict.
    const again = await call(acme.adminKey, "POST", `${P}/builtins/envs/production/copy`, {
      target_env: { existing: "development" },
      conflict_strategy: "fail",
    });
    assert.equal(again.status, 201, again.body);
  });

  test("the PDP answers for an environment with built-in resources and user attributes", async () => {
    const e = env();
    const { acme, call } = e;
    await call(acme.adminKey, "POST", `${P}/default/envs`, { key: "checked", name: "Checked" });
    const key = (await call(acme.adminKey, "GET", "/v2/api-key/default/checked")).json.secret as string;
    await call(key, "POST", "/v2/schema/default/checked/users/attributes", { key: "age", type: "number" });
    const pdp = await startTestPdp(e);
    try {
      const check = {
        user: { key: "ann", attributes: { age: 3 } },
        action: "read",
        resource: { type: "__user" },
      };
      const res = await pdp.call(key, "/allowed", check);
      assert.equal(res.status, 200, res.body);
      assert.equal(res.json.allow, false);
      const listed = await pdp.call(key, "/user-permissions", { user: { key: "ann" } });
      assert.equal(listed.status, 200, listed.body);
      assert.deepEqual(listed.json, {});
    } finally {
      await pdp.close();
    }
  });
});
