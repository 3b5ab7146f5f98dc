import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { describeEachDialect } from "../helpers/app.ts";
import { startTestPdp, type TestPdp } from "../helpers/pdp.ts";

// The OpenID AuthZEN interop "Todo" application (test/fixtures/authzen/README.md): its policy is modelled through
// the public /v2 API, then every vector goes to the PDP over real HTTP and the answer is judged twice: the way
// the interop runner judges it (JSON.stringify of `decision || false`, of `evaluations || []`) and as a whole
// body.

interface Vector {
  request: Record<string, unknown>;
  expected: unknown;
}
interface VectorFile {
  evaluation?: Vector[];
  evaluations?: Vector[];
}
const DRAFTS = ["authorization-api-1_0-01", "authorization-api-1_0-02"] as const;
const vectors = (draft: string): VectorFile =>
  JSON.parse(
    readFileSync(new URL(`../fixtures/authzen/todo-decisions-${draft}.json`, import.meta.url), "utf8"),
  ) as VectorFile;

// The interop directory (the PIP of the scenario): the subject ids are the identity provider's PIDs.
const PEOPLE = [
  {
    pid: "CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
    email: "rick@the-citadel.com",
    roles: ["admin", "evil_genius"],
  },
  {
    pid: "CiRmZDE2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
    email: "morty@the-citadel.com",
    roles: ["editor"],
  },
  {
    pid: "CiRmZDI2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
    email: "summer@the-smiths.com",
    roles: ["editor"],
  },
  {
    pid: "CiRmZDM2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
    email: "beth@the-smiths.com",
    roles: ["viewer"],
  },
  {
    pid: "CiRmZDQ2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
    email: "jerry@the-smiths.com",
    roles: ["viewer"],
  },
] as const;
const [RICK, MORTY, , BETH] = PEOPLE.map((p) => p.pid) as [string, string, string, string, string];

const urlOf = (app: FastifyInstance) => `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

interface HttpReply {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

async function http(
  method: string,
  url: string,
  key: string | null,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<HttpReply> {
  const res = await fetch(url, {
    method,
    headers: {
      ...(key !== null && { authorization: `Bearer ${key}` }),
      ...(body !== undefined && { "content-type": "application/json" }),
      ...headers,
    },
    ...(body !== undefined && { body: typeof body === "string" ? body : JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, headers: res.headers, json };
}

describeEachDialect("AuthZEN: the interop Todo vectors over HTTP", (env) => {
  let pdp: TestPdp;
  let api = "";
  let pdpUrl = "";
  let key = "";
  let devKey = "";
  const S = "/v2/schema/default/production";
  const F = "/v2/facts/default/production";
  const write = async (url: string, body: unknown) => {
    const res = await http("POST", `${api}${url}`, key, body);
    assert.ok(res.status >= 200 && res.status < 300, `${url} -> ${res.status} ${JSON.stringify(res.json)}`);
  };
  const authzen = (path: string, body: unknown, headers?: Record<string, string>, as = key) =>
    http("POST", `${pdpUrl}${path}`, as, body, headers);

  before(async () => {
    const { acme, call, app } = env();
    key = (await call(acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    devKey = (await call(acme.adminKey, "GET", "/v2/api-key/default/development")).json.secret;
    await app.listen({ port: 0, host: "127.0.0.1" });
    api = urlOf(app);
    pdp = await startTestPdp(env());
    pdpUrl = pdp.url;

    // The Todo policy: four roles, each extending the one below; ownership is an attribute rule.
    await write(`${S}/resources`, { key: "user", name: "User", actions: { can_read_user: {} } });
    await write(`${S}/resources`, {
      key: "todo",
      name: "Todo",
      actions: { can_read_todos: {}, can_create_todo: {}, can_update_todo: {}, can_delete_todo: {} },
      attributes: { ownerID: { type: "string" } },
    });
    await write(`${S}/roles`, {
      key: "viewer",
      name: "Viewer",
      permissions: ["user:can_read_user", "todo:can_read_todos"],
    });
    await write(`${S}/roles`, {
      key: "editor",
      name: "Editor",
      permissions: ["todo:can_create_todo"],
      extends: ["viewer"],
    });
    await write(`${S}/roles`, {
      key: "admin",
      name: "Admin",
      permissions: ["todo:can_delete_todo"],
      extends: ["editor"],
    });
    await write(`${S}/roles`, {
      key: "evil_genius",
      name: "Evil genius",
      permissions: ["todo:can_update_todo"],
      extends: ["editor"],
    });
    await write(`${S}/condition_sets`, {
      key: "editors",
      name: "Editors",
      type: "userset",
      conditions: { allOf: [{ "user.roles": { array_contains: "editor" } }] },
    });
    await write(`${S}/condition_sets`, {
      key: "own_todos",
      name: "The user's own todos",
      type: "resourceset",
      resource_id: "todo",
      conditions: { allOf: [{ "resource.ownerID": { equals: { ref: "user.email" } } }] },
    });
    for (const permission of ["todo:can_update_todo", "todo:can_delete_todo"]) {
      await write(`${F}/set_rules`, { user_set: "editors", permission, resource_set: "own_todos" });
    }
    for (const person of PEOPLE) {
      await write(`${F}/users`, {
        key: person.pid,
        email: person.email,
        attributes: { roles: person.roles },
        role_assignments: person.roles.map((role) => ({ role, tenant: "default" })),
      });
    }
    // Two stored todos, for the searches and for decisions from stored attributes.
    await write(`${F}/resource_instances`, {
      resource: "todo",
      key: "t-rick",
      tenant: "default",
      attributes: { ownerID: "rick@the-citadel.com" },
    });
    await write(`${F}/resource_instances`, {
      resource: "todo",
      key: "t-morty",
      tenant: "default",
      attributes: { ownerID: "morty@the-citadel.com" },
    });
  });

  after(async () => {
    await pdp?.close();
  });

  for (const draft of DRAFTS) {
    test(`every vector of ${draft} matches, judged as the interop runner judges and as a whole body`, async () => {
      const { evaluation = [], evaluations = [] } = vectors(draft);
      const misses: string[] = [];
      let total = 0;
      let runnerPasses = 0;
      for (const [endpoint, list] of [
        ["evaluation", evaluation],
        ["evaluations", evaluations],
      ] as const) {
        for (const vector of list) {
          total++;
          const res = await authzen(`/access/v1/${endpoint}`, vector.request);
          // runner.ts: `data.decision || false` for one evaluation, `data.evaluations || []` for several.
          const judged =
            endpoint === "evaluation" ? res.json?.decision || false : res.json?.evaluations || [];
          const whole =
            endpoint === "evaluation" ? { decision: vector.expected } : { evaluations: vector.expected };
          const runnerPass = JSON.stringify(vector.expected) === JSON.stringify(judged);
          const wholePass = res.status === 200 && JSON.stringify(res.json) === JSON.stringify(whole);
          if (runnerPass) runnerPasses++;
          if (!runnerPass || !wholePass) {
            misses.push(
              `${endpoint} ${JSON.stringify(vector.request)} -> ${res.status} ${JSON.stringify(res.json)}`,
            );
          }
        }
      }
      assert.equal(total, draft.endsWith("01") ? 40 : 43);
      const summary = `the runner passes ${runnerPasses}/${total}, whole bodies match ${total - misses.length}/${total}`;
      assert.equal(misses.length, 0, `${summary}; first misses:\n${misses.slice(0, 5).join("\n")}`);
    });
  }

  test("evaluations_semantic: execute_all (the default), deny_on_first_deny and permit_on_first_permit", async () => {
    const own = { type: "todo", id: "x1", properties: { ownerID: "morty@the-citadel.com" } };
    const ricks = { type: "todo", id: "x2", properties: { ownerID: "rick@the-citadel.com" } };
    const body = (semantic?: string) => ({
      subject: { type: "user", id: MORTY },
      action: { name: "can_update_todo" },
      ...(semantic !== undefined && { options: { evaluations_semantic: semantic } }),
      evaluations: [{ resource: own }, { resource: ricks }, { resource: own }],
    });
    const all = [{ decision: true }, { decision: false }, { decision: true }];
    assert.deepEqual((await authzen("/access/v1/evaluations", body())).json, { evaluations: all });
    assert.deepEqual((await authzen("/access/v1/evaluations", body("execute_all"))).json, {
      evaluations: all,
    });
    assert.deepEqual((await authzen("/access/v1/evaluations", body("deny_on_first_deny"))).json, {
      evaluations: [
        { decision: true },
        { decision: false, context: { code: "200", reason: "deny_on_first_deny" } },
      ],
    });
    assert.deepEqual((await authzen("/access/v1/evaluations", body("permit_on_first_permit"))).json, {
      evaluations: [{ decision: true }],
    });
    const denyFirst = {
      ...body("permit_on_first_permit"),
      evaluations: [{ resource: ricks }, { resource: own }],
    };
    assert.deepEqual((await authzen("/access/v1/evaluations", denyFirst)).json, {
      evaluations: [{ decision: false }, { decision: true }],
    });
    // Without an evaluations array the request is a single evaluation, answered as one.
    const single = await authzen("/access/v1/evaluations", {
      subject: { type: "user", id: MORTY },
      action: { name: "can_update_todo" },
      resource: own,
    });
    assert.deepEqual(single.json, { decision: true });
  });

  test("decisions: stored instances use their stored attributes, unknown ids are decided on the type", async () => {
    const decide = async (subject: string, action: string, resource: unknown) =>
      (
        await authzen("/access/v1/evaluation", {
          subject: { type: "user", id: subject },
          action: { name: action },
          resource,
        })
      ).json;
    assert.deepEqual(await decide(MORTY, "can_update_todo", { type: "todo", id: "t-morty" }), {
      decision: true,
    });
    assert.deepEqual(await decide(MORTY, "can_update_todo", { type: "todo", id: "t-rick" }), {
      decision: false,
    });
    // An unknown id: tenant roles and attribute rules decide, with the request's properties.
    assert.deepEqual(await decide(BETH, "can_read_todos", { type: "todo", id: "nowhere" }), {
      decision: true,
    });
    assert.deepEqual(await decide(BETH, "can_create_todo", { type: "todo", id: "nowhere" }), {
      decision: false,
    });
    // Subjects are Gatehouse users; another subject type is denied, an unknown user too.
    const robot = await authzen("/access/v1/evaluation", {
      subject: { type: "robot", id: RICK },
      action: { name: "can_read_todos" },
      resource: { type: "todo", id: "t-rick" },
    });
    assert.deepEqual(robot.json, { decision: false });
    assert.deepEqual(await decide("nobody", "can_read_todos", { type: "todo", id: "t-rick" }), {
      decision: false,
    });
    // The key selects the environment: the development environment holds none of this.
    const dev = await authzen(
      "/access/v1/evaluation",
      {
        subject: { type: "user", id: RICK },
        action: { name: "can_read_todos" },
        resource: { type: "todo", id: "t" },
      },
      {},
      devKey,
    );
    assert.deepEqual(dev.json, { decision: false });
    // A request id is echoed.
    const withId = await authzen(
      "/access/v1/evaluation",
      {
        subject: { type: "user", id: RICK },
        action: { name: "can_read_todos" },
        resource: { type: "todo", id: "t" },
      },
      { "x-request-id": "req-42" },
    );
    assert.equal(withId.headers.get("x-request-id"), "req-42");
  });

  test("malformed requests are 400 with the error body; a deny is still 200", async () => {
    const subject = { type: "user", id: RICK };
    const action = { name: "can_read_todos" };
    const resource = { type: "todo", id: "t-rick" };
    const bad: [string, unknown][] = [
      ["/access/v1/evaluation", "{not json"],
      ["/access/v1/evaluation", []],
      ["/access/v1/evaluation", { action, resource }],
      ["/access/v1/evaluation", { subject: { type: "user" }, action, resource }],
      ["/access/v1/evaluation", { subject: { id: RICK }, action, resource }],
      ["/access/v1/evaluation", { subject, resource }],
      ["/access/v1/evaluation", { subject, action: { name: 7 }, resource }],
      ["/access/v1/evaluation", { subject, action }],
      ["/access/v1/evaluation", { subject, action, resource: { type: "todo" } }],
      ["/access/v1/evaluation", { subject, action, resource: { ...resource, properties: [] } }],
      ["/access/v1/evaluation", { subject, action, resource, context: "now" }],
      ["/access/v1/evaluations", { subject, action, evaluations: {} }],
      ["/access/v1/evaluations", { subject, action, evaluations: [{}] }],
      ["/access/v1/evaluations", { subject, action, evaluations: ["x"] }],
      [
        "/access/v1/evaluations",
        { subject, action, resource, evaluations: [{}], options: { evaluations_semantic: "some" } },
      ],
      ["/access/v1/evaluations", { subject, action, resource, evaluations: [{}], options: "x" }],
      ["/access/v1/search/subject", { subject: {}, action, resource }],
      ["/access/v1/search/resource", { subject, action, resource: { id: "x" } }],
      ["/access/v1/search/action", { subject, resource: { type: "todo" } }],
      ["/access/v1/search/subject", { subject: { type: "user" }, action, resource, page: { limit: -1 } }],
      [
        "/access/v1/search/subject",
        { subject: { type: "user" }, action, resource, page: { token: "garbage" } },
      ],
    ];
    // Deep nesting is refused before anything recursive (the log's encoder, the page digest) meets it.
    const deep = `{"subject":{"type":"user","id":"${RICK}"},"action":{"name":"can_read_todos"},"resource":{"type":"todo","id":"t-rick"},"context":{"d":${"[".repeat(100_000)}${"]".repeat(100_000)}}}`;
    for (const path of ["evaluation", "evaluations", "search/subject", "search/resource", "search/action"]) {
      bad.push([`/access/v1/${path}`, deep]);
    }
    for (const [path, body] of bad) {
      const res = await authzen(path, body);
      assert.equal(
        res.status,
        400,
        `${path} ${JSON.stringify(body).slice(0, 300)} -> ${res.status} ${JSON.stringify(res.json)}`,
      );
      assert.equal(res.json.error_code, "BAD_REQUEST");
      for (const field of ["id", "title", "message", "support_link"])
        assert.equal(typeof res.json[field], "string");
    }
    const unknownAction = await authzen("/access/v1/evaluation", {
      subject,
      action: { name: "fly" },
      resource,
    });
    assert.equal(unknownAction.status, 200);
    assert.deepEqual(unknownAction.json, { decision: false });
    assert.equal(
      (await authzen("/access/v1/evaluation", { subject, action, resource }, {}, "wrong")).status,
      401,
    );
  });

  test("searches: subjects, resources and actions, as the evaluation decides them, with pages", async () => {
    const user = (id: string) => ({ type: "user", id });
    // Searches list in the PDP's storage order (pages of a walk): compared as sets, by id.
    const byId = (json: { results: { id: string }[] }) => ({
      ...json,
      results: [...json.results].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
    });
    const subjects = await authzen("/access/v1/search/subject", {
      subject: { type: "user" },
      action: { name: "can_update_todo" },
      resource: { type: "todo", id: "t-morty" },
    });
    assert.equal(subjects.status, 200, JSON.stringify(subjects.json));
    // Rick through his evil_genius role, Morty through the ownership rule.
    assert.deepEqual(byId(subjects.json), byId({ results: [user(RICK), user(MORTY)] }));
    const byProperties = await authzen("/access/v1/search/subject", {
      subject: { type: "user" },
      action: { name: "can_delete_todo" },
      resource: { type: "todo", id: "new-one", properties: { ownerID: "morty@the-citadel.com" } },
    });
    assert.deepEqual(byId(byProperties.json), byId({ results: [user(RICK), user(MORTY)] }));
    const robots = await authzen("/access/v1/search/subject", {
      subject: { type: "robot" },
      action: { name: "can_read_todos" },
      resource: { type: "todo", id: "t-morty" },
    });
    assert.deepEqual(robots.json, { results: [] });

    const resources = async (subject: string, action: string) =>
      (
        await authzen("/access/v1/search/resource", {
          subject: user(subject),
          action: { name: action },
          resource: { type: "todo" },
        })
      ).json as { results: { id: string }[] };
    assert.deepEqual(byId(await resources(MORTY, "can_update_todo")), {
      results: [{ type: "todo", id: "t-morty" }],
    });
    assert.deepEqual(byId(await resources(RICK, "can_update_todo")), {
      results: [
        { type: "todo", id: "t-morty" },
        { type: "todo", id: "t-rick" },
      ],
    });
    assert.deepEqual(byId(await resources(BETH, "can_update_todo")), { results: [] });
    // Through a tenant role: every todo of the tenant.
    assert.deepEqual(byId(await resources(BETH, "can_read_todos")), {
      results: [
        { type: "todo", id: "t-morty" },
        { type: "todo", id: "t-rick" },
      ],
    });
    assert.deepEqual(byId(await resources(BETH, "fly")), { results: [] });

    const actions = async (subject: string, resource: unknown) =>
      (await authzen("/access/v1/search/action", { subject: user(subject), resource })).json;
    const names = (...list: string[]) => ({ results: list.map((name) => ({ name })) });
    assert.deepEqual(
      await actions(MORTY, { type: "todo", id: "t-morty" }),
      names("can_create_todo", "can_delete_todo", "can_read_todos", "can_update_todo"),
    );
    assert.deepEqual(
      await actions(MORTY, { type: "todo", id: "t-rick" }),
      names("can_create_todo", "can_read_todos"),
    );
    assert.deepEqual(await actions(BETH, { type: "todo", id: "t-morty" }), names("can_read_todos"));
    assert.deepEqual(await actions(BETH, { type: "nothing", id: "x" }), names());

    // Pages: an opaque token, then the rest; count and total on every page.
    const everyone = PEOPLE.map((p) => user(p.pid));
    const page = (token?: string) =>
      authzen("/access/v1/search/subject", {
        subject: { type: "user" },
        action: { name: "can_read_todos" },
        resource: { type: "todo", id: "t-rick" },
        page: { limit: 2, ...(token !== undefined && { token }) },
      });
    const seen: unknown[] = [];
    let res = await page();
    for (let i = 0; i < 3; i++) {
      assert.equal(res.status, 200, JSON.stringify(res.json));
      assert.equal(res.json.page.count, res.json.results.length);
      seen.push(...res.json.results);
      if (res.json.page.next_token === "") break;
      res = await page(res.json.page.next_token);
    }
    assert.equal(res.json.page.next_token, "");
    assert.deepEqual(byId({ results: seen as { id: string }[] }), byId({ results: everyone }));
  });

  test("/.well-known/authzen-configuration names this PDP's endpoints, without a key", async () => {
    const res = await http("GET", `${pdpUrl}/.well-known/authzen-configuration`, null);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    assert.deepEqual(res.json, {
      policy_decision_point: pdpUrl,
      access_evaluation_endpoint: `${pdpUrl}/access/v1/evaluation`,
      access_evaluations_endpoint: `${pdpUrl}/access/v1/evaluations`,
      search_subject_endpoint: `${pdpUrl}/access/v1/search/subject`,
      search_resource_endpoint: `${pdpUrl}/access/v1/search/resource`,
      search_action_endpoint: `${pdpUrl}/access/v1/search/action`,
    });
    // Every endpoint it names answers.
    for (const [name, url] of Object.entries(res.json as Record<string, string>)) {
      if (name === "policy_decision_point") continue;
      assert.notEqual((await http("POST", url, key, {})).status, 404, name);
    }
  });
});
