import { test, before } from "node:test";
import assert from "node:assert/strict";
import { buildTestApp, describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { validatePermitResponse } from "../helpers/permit-contract.ts";
import { gunzipText } from "../../src/lib/gzip-text.ts";

const MAX_BODY_BYTES = 2048;

interface Event {
  id: string;
  method: string;
  path: string;
  status: number;
  success: boolean;
  [field: string]: unknown;
}

/** Waits until every answered call is written (the log is written after the response, in batches). */
async function flushLog(env: TestEnv): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await env.app.apiLog.flush();
}

async function history(env: TestEnv, key: string, query = ""): Promise<Event[]> {
  await flushLog(env);
  const res = await env.call(key, "GET", `/v2/history?per_page=100${query}`);
  assert.equal(res.status, 200, res.body as string);
  assert.deepEqual(validatePermitResponse("get", "/v2/history", 200, res.json), []);
  return res.json.data;
}

/** The stored records, a compressed response body as its text (so that a secret in it would show). */
async function storedRows(env: TestEnv) {
  const rows = await env.store.db.selectFrom("api_log").selectAll().execute();
  return Promise.all(
    rows.map(async ({ response_body_gzip: gzip, ...row }) => ({
      ...row,
      response_body: gzip === null ? row.response_body : await gunzipText(gzip),
    })),
  );
}

const sig = (e: Event) => `${e.method} ${e.path} ${e.status}`;

describeEachDialect(
  "API log and GET /v2/history",
  (env) => {
    /** A key of acme's organization that makes a known sequence of calls. */
    const probe = { id: "", secret: "" };
    const keys: Record<string, { id: string; secret: string }> = {};

    before(async () => {
      const { acme, call } = env();
      const make = async (name: string, body: Record<string, unknown>) => {
        const res = await call(acme.adminKey, "POST", "/v2/api-key", { name, ...body });
        assert.equal(res.status, 200, res.body as string);
        return { id: res.json.id as string, secret: res.json.secret as string };
      };
      Object.assign(probe, await make("history-probe", { object_type: "org" }));
      keys["project"] = await make("project-key", { object_type: "project", project_id: acme.projectId });
      keys["prod"] = await make("prod-key", {
        object_type: "env",
        project_id: acme.projectId,
        environment_id: acme.envs.production,
      });
      keys["noAccess"] = await make("no-access", { object_type: "org", access_level: "no_access" });

      // The known sequence, oldest first.
      assert.equal((await call(probe.secret, "GET", "/v2/projects")).status, 200);
      assert.equal((await call(probe.secret, "GET", "/v2/projects/nope")).status, 404);
      assert.equal((await call(probe.secret, "POST", "/v2/projects", { key: 1 })).status, 422);
      assert.equal(
        (await call(probe.secret, "POST", "/v2/projects", { key: "hist", name: "Hist" })).status,
        200,
      );
      assert.equal((await call(probe.secret, "GET", "/v2/projects/default/envs/production?x=1")).status, 200);
      assert.equal((await call(null, "GET", "/v2/projects")).status, 401);
    });

    test("a sequence of calls appears newest first with the right fields; 401s belong to no organization", async () => {
      const { acme, call, store } = env();
      const events = await history(env(), acme.adminKey, `&actor_id=${probe.id}`);
      assert.deepEqual(events.map(sig), [
        "GET /v2/projects/default/envs/production 200",
        "POST /v2/projects 200",
        "POST /v2/projects 422",
        "GET /v2/projects/nope 404",
        "GET /v2/projects 200",
      ]);
      for (const e of events) {
        assert.equal(e.org_id, acme.id);
        assert.equal(e.actor_type, "api_key");
        assert.equal(e.actor_id, probe.id);
        assert.equal(e.actor_display_name, "history-probe");
        assert.equal(e.client_ip, "127.0.0.1");
        assert.equal(e.success, e.status < 400);
        assert.match(String(e.request_id), /^[0-9a-f-]{36}$/);
        assert.ok(Date.now() - Date.parse(String(e.timestamp)) < 60_000, String(e.timestamp));
      }
      // The path named the project and environment by key: the record has both ids and keys.
      const scoped = events[0]!;
      assert.equal(scoped.project_id, acme.projectId);
      assert.equal(scoped.project_key, "default");
      assert.equal(scoped.env_id, acme.envs.production);
      assert.equal(scoped.env_key, "production");
      assert.equal(events[3]!.project_id, undefined, "a project that does not exist is not recorded as one");

      const page = await call(acme.adminKey, "GET", `/v2/history?actor_id=${probe.id}&per_page=2&page=3`);
      assert.deepEqual(
        { ...page.json, data: page.json.data.length },
        { data: 1, total_count: 5, page_count: 3, pagination_count: 5 },
      );

      // The full record of the create, and its raw bodies.
      const created = events[1]!;
      const full = await call(acme.adminKey, "GET", `/v2/history/${created.id}`);
      assert.equal(full.status, 200);
      assert.deepEqual(validatePermitResponse("get", "/v2/history/{event_id}", 200, full.json), []);
      assert.deepEqual(JSON.parse(full.json.request_body), { key: "hist", name: "Hist" });
      assert.equal(JSON.parse(full.json.response_body).key, "hist");
      const request = await call(acme.adminKey, "GET", `/v2/history/${created.id}/request`);
      assert.equal(request.status, 200);
      assert.match(String(request.headers["content-type"]), /application\/json/);
      assert.equal(request.json, full.json.request_body);
      const response = await call(acme.adminKey, "GET", `/v2/history/${created.id}/response`);
      assert.equal(response.json, full.json.response_body);
      const get = await call(acme.adminKey, "GET", `/v2/history/${events[4]!.id}/request`);
      assert.equal(get.json, "", "a GET has no request body");
      const invalid = await call(acme.adminKey, "GET", `/v2/history/${events[2]!.id}`);
      assert.deepEqual(JSON.parse(invalid.json.request_body), { key: 1 });
      assert.equal(JSON.parse(invalid.json.response_body).error_code, "INVALID_INPUT");

      assert.equal((await call(acme.adminKey, "GET", `/v2/history/${crypto.randomUUID()}`)).status, 404);
      assert.equal((await call(acme.adminKey, "GET", `/v2/history/not-a-uuid`)).status, 422);

      // The 401 call is stored without organization or key, and no organization can read it.
      const anonymous = await store.db
        .selectFrom("api_log")
        .selectAll()
        .where("organization_id", "is", null)
        .execute();
      assert.deepEqual(
        anonymous.map((r) => [r.method, r.path, r.status, r.actor_type, r.actor_id]),
        [["GET", "/v2/projects", 401, "anonymous", null]],
      );
      assert.equal((await history(env(), acme.adminKey, "&status_code=401")).length, 0);
      const row = await store.db
        .selectFrom("api_log")
        .selectAll()
        .where("path", "=", "/v2/projects/default/envs/production")
        .executeTakeFirstOrThrow();
      assert.equal(row.query, "x=1");
      assert.ok(row.duration_ms > 0 && row.duration_ms < 10_000, String(row.duration_ms));
    });

    test("text finds calls by a part of their path or request body (case-sensitive); with_request_body adds the bodies", async () => {
      const { acme, globex, call } = env();
      const byProbe = `&actor_id=${probe.id}`;
      const found = await history(env(), acme.adminKey, `${byProbe}&text=envs/prod`);
      assert.deepEqual(found.map(sig), ["GET /v2/projects/default/envs/production 200"]);
      assert.deepEqual(await history(env(), acme.adminKey, `${byProbe}&text=Envs`), []);
      assert.deepEqual(await history(env(), globex.adminKey, `&text=envs/prod`), []);
      // In the request body: the create of project hist names it there only.
      const inBody = await history(env(), acme.adminKey, `${byProbe}&text=${encodeURIComponent('"hist"')}`);
      assert.deepEqual(inBody.map(sig), ["POST /v2/projects 200"]);
      // An extension of Permit's answer (asked for by name), so not checked against its contract.
      const withBodies = await call(
        acme.adminKey,
        "GET",
        `/v2/history?actor_id=${probe.id}&method=POST&with_request_body=true`,
      );
      assert.deepEqual(
        (withBodies.json.data as Event[]).map((e) => e["request_body"]),
        [JSON.stringify({ key: "hist", name: "Hist" }), JSON.stringify({ key: 1 })],
      );
      const withoutBodies = await history(env(), acme.adminKey, `${byProbe}&method=POST`);
      assert.ok(withoutBodies.every((e) => !("request_body" in e)));
      const tooLong = await call(acme.adminKey, "GET", `/v2/history?text=${"x".repeat(256)}`);
      assert.equal(tooLong.status, 422);
    });

    test("GET /v2/history/stats: calls per minute by status class, with the list's filters, in the organization", async () => {
      const { acme, globex, call } = env();
      await flushLog(env());
      const stats = async (key: string, query: string) => {
        const res = await call(key, "GET", `/v2/history/stats?${query}`);
        assert.equal(res.status, 200, res.body as string);
        return res.json as {
          from: string;
          until: string;
          data: { minute: string; status_class: string; count: number }[];
        };
      };
      const totals = (data: { status_class: string; count: number }[]) => {
        const out: Record<string, number> = {};
        for (const d of data) out[d.status_class] = (out[d.status_class] ?? 0) + d.count;
        return out;
      };
      const probeStats = await stats(acme.adminKey, `actor_id=${probe.id}`);
      assert.deepEqual(totals(probeStats.data), { "2xx": 3, "4xx": 2 });
      for (const d of probeStats.data) assert.match(d.minute, /^\d{4}-\d\d-\d\dT\d\d:\d\d:00\+00:00$/);
      assert.ok(
        Date.parse(probeStats.until) - Date.parse(probeStats.from) === 3_600_000,
        "default: the last hour",
      );
      assert.deepEqual(totals((await stats(acme.adminKey, `actor_id=${probe.id}&status_code=404`)).data), {
        "4xx": 1,
      });
      // Another organization sees none of it; a range in the past has nothing; more than a week is refused.
      assert.deepEqual((await stats(globex.adminKey, `actor_id=${probe.id}`)).data, []);
      assert.deepEqual((await stats(acme.adminKey, `timestamp_from=0&timestamp_until=3600`)).data, []);
      const tooLong = await call(
        acme.adminKey,
        "GET",
        "/v2/history/stats?timestamp_from=0&timestamp_until=700000",
      );
      assert.equal(tooLong.status, 422);
    });

    test("filters: one and several status codes, success, method, path, project, environment, time", async () => {
      const { acme, call } = env();
      const only = `&actor_id=${probe.id}`;
      const sigs = async (query: string) => (await history(env(), acme.adminKey, only + query)).map(sig);
      assert.deepEqual(await sigs("&status_code=404"), ["GET /v2/projects/nope 404"]);
      assert.deepEqual(await sigs("&status_code=404&status_code=422"), [
        "POST /v2/projects 422",
        "GET /v2/projects/nope 404",
      ]);
      assert.deepEqual(await sigs("&status_code=200&status_code=422&status_code=500"), [
        "GET /v2/projects/default/envs/production 200",
        "POST /v2/projects 200",
        "POST /v2/projects 422",
        "GET /v2/projects 200",
      ]);
      assert.deepEqual(await sigs("&status_code=409"), []);
      assert.deepEqual(await sigs("&success=false"), ["POST /v2/projects 422", "GET /v2/projects/nope 404"]);
      assert.deepEqual(await sigs("&method=post"), ["POST /v2/projects 200", "POST /v2/projects 422"]);
      assert.deepEqual(await sigs("&path=/v2/projects&method=GET"), ["GET /v2/projects 200"]);
      assert.deepEqual(await sigs("&project_id=default"), ["GET /v2/projects/default/envs/production 200"]);
      assert.deepEqual(await sigs(`&project_id=${acme.projectId}&env_id=production`), [
        "GET /v2/projects/default/envs/production 200",
      ]);
      assert.deepEqual(await sigs("&env_id=development"), []);
      assert.deepEqual(await sigs("&project_id=no-such-project"), []);
      assert.deepEqual(await sigs("&actor_display_name=history-probe&status_code=404"), [
        "GET /v2/projects/nope 404",
      ]);
      assert.deepEqual(await sigs("&client_ip=10.0.0.1"), []);
      const nowSec = Math.floor(Date.now() / 1000);
      assert.equal((await sigs(`&timestamp_from=${nowSec - 600}&timestamp_until=${nowSec + 600}`)).length, 5);
      assert.deepEqual(await sigs(`&timestamp_from=${nowSec + 600}`), []);
      assert.deepEqual(await sigs(`&timestamp_until=${nowSec - 600}`), []);

      for (const bad of ["per_page=101", "page=0", "status_code=abc", "success=maybe", "timestamp_from=-1"]) {
        const res = await call(acme.adminKey, "GET", `/v2/history?${bad}`);
        assert.equal(res.status, 422, bad);
        assert.equal(res.json.error_code, "INVALID_INPUT");
      }
    });

    test("an organization key sees its whole organization; project and environment keys only their scope", async () => {
      const { acme, globex, call } = env();
      const P = acme.projectId;
      const dev = acme.envs.development;
      assert.equal(
        (await call(keys["prod"]!.secret, "GET", `/v2/projects/${P}/envs/production`)).status,
        200,
      );
      assert.equal((await call(acme.adminKey, "GET", `/v2/projects/${P}/envs/${dev}`)).status, 200);
      assert.equal((await call(acme.adminKey, "GET", `/v2/api-key/scope`)).status, 200);
      assert.equal((await call(keys["project"]!.secret, "GET", `/v2/projects`)).status, 200);
      assert.equal((await call(globex.adminKey, "GET", `/v2/projects/default/envs/development`)).status, 200);

      const globexView = await history(env(), globex.adminKey);
      assert.ok(globexView.length > 0);
      for (const e of globexView) assert.equal(e.org_id, globex.id, JSON.stringify(e));
      assert.ok(globexView.some((e) => e.env_id === globex.envs.development));

      const acmeView = await history(env(), acme.adminKey);
      for (const e of acmeView) assert.equal(e.org_id, acme.id, JSON.stringify(e));
      assert.ok(acmeView.some((e) => e.actor_id === keys["prod"]!.id));
      assert.ok(acmeView.some((e) => e.env_id === dev));
      assert.ok(acmeView.some((e) => e.path === "/v2/api-key/scope"));

      const projectView = await history(env(), keys["project"]!.secret);
      assert.ok(projectView.length > 0);
      for (const e of projectView) assert.equal(e.project_id, P, JSON.stringify(e));
      assert.ok(
        projectView.some((e) => e.env_id === dev),
        "the project key sees calls in every environment",
      );
      assert.ok(projectView.some((e) => e.path === "/v2/projects" && e.actor_id === keys["project"]!.id));
      assert.ok(!projectView.some((e) => e.path === "/v2/api-key/scope"), "organization-level calls are not");

      const prodView = await history(env(), keys["prod"]!.secret);
      assert.ok(prodView.length > 0);
      for (const e of prodView) assert.equal(e.env_id, acme.envs.production, JSON.stringify(e));

      // One record, read through every key: only the keys whose scope covers it find it.
      const devCall = acmeView.find((e) => e.env_id === dev)!;
      assert.equal((await call(acme.adminKey, "GET", `/v2/history/${devCall.id}`)).status, 200);
      assert.equal((await call(keys["project"]!.secret, "GET", `/v2/history/${devCall.id}`)).status, 200);
      assert.equal((await call(keys["prod"]!.secret, "GET", `/v2/history/${devCall.id}`)).status, 404);
      assert.equal((await call(globex.adminKey, "GET", `/v2/history/${devCall.id}`)).status, 404);
      assert.equal((await call(globex.adminKey, "GET", `/v2/history/${devCall.id}/response`)).status, 404);
      // Filters cannot widen the scope.
      assert.deepEqual(await history(env(), keys["prod"]!.secret, `&env_id=${dev}`), []);
      assert.deepEqual(await history(env(), globex.adminKey, `&project_id=${P}`), []);
      assert.equal((await call(keys["noAccess"]!.secret, "GET", "/v2/history")).status, 403);
    });

    test("no secret reaches the stored log: keys, rotated and new secrets, secret-looking fields", async () => {
      const { acme, globex, call } = env();
      const secrets: string[] = [acme.adminKey, globex.adminKey, probe.secret];
      const created = await call(acme.adminKey, "POST", "/v2/api-key", { object_type: "org", name: "leaky" });
      secrets.push(created.json.secret);
      const shown = await call(acme.adminKey, "GET", `/v2/api-key/${created.json.id}`);
      assert.equal(shown.json.secret, created.json.secret);
      const rotated = await call(acme.adminKey, "POST", `/v2/api-key/${created.json.id}/rotate-secret`);
      assert.equal(rotated.status, 200);
      const fresh: string = rotated.json.secret;
      secrets.push(fresh);
      const envKey = await call(acme.adminKey, "GET", `/v2/api-key/default/production`);
      assert.equal(envKey.status, 200);
      secrets.push(envKey.json.secret);
      const org = await call(acme.adminKey, "POST", "/v2/orgs", { key: "leaky-org", name: "Leaky" });
      assert.equal(org.status, 200);
      secrets.push(org.json.api_key_secret);
      assert.equal((await call(org.json.api_key_secret, "GET", "/v2/orgs/active/org")).status, 200);

      // The caller's own key, and other secrets, where clients put them by mistake.
      const plain = ["hunter2-password-value", "plain-client-secret-value", "tok-value-0123456789"];
      secrets.push(...plain);
      assert.equal((await call(fresh, "GET", `/v2/projects?token=${fresh}&note=${fresh}`)).status, 200);
      assert.equal((await call(fresh, "GET", `/v2/projects/${fresh}`)).status, 404);
      assert.equal((await call(fresh, "GET", `/v2/history/${fresh}`)).status, 422);
      const project = await call(fresh, "POST", "/v2/projects", {
        key: "secretive",
        name: `named ${fresh}`,
        settings: { password: plain[0], client_secret: plain[1], nested: [{ api_token: plain[2] }] },
      });
      assert.equal(project.status, 200, project.body as string);
      assert.equal(project.json.settings.client_secret, plain[1], "the API itself still answers the value");
      const unknown = `gh_${"A".repeat(43)}`;
      secrets.push(unknown);
      assert.equal((await call(unknown, "GET", "/v2/projects")).status, 401);
      assert.equal((await call(unknown, "GET", `/v2/projects?api_key=${unknown}`)).status, 401);

      await flushLog(env());
      const rows = await storedRows(env());
      const stored = JSON.stringify(rows);
      assert.ok(rows.length > 20);
      for (const secret of secrets) assert.ok(!stored.includes(secret), `a secret is in the log: ${secret}`);
      assert.ok(stored.includes("[REDACTED]"));
      // ... while the records themselves are there and still useful.
      const rotation = rows.find((r) => r.path === `/v2/api-key/${created.json.id}/rotate-secret`);
      assert.equal(JSON.parse(rotation?.response_body ?? "{}").id, created.json.id);
      assert.equal(JSON.parse(rotation?.response_body ?? "{}").secret, "[REDACTED]");
      const create = rows.find((r) => r.method === "POST" && r.request_body?.includes('"secretive"'));
      assert.ok(create);
      assert.equal(create.status, 200);
      assert.equal(JSON.parse(create.request_body ?? "{}").settings.client_secret, "[REDACTED]");
      assert.equal(JSON.parse(create.response_body ?? "{}").name, "named [REDACTED]");
      assert.ok(rows.some((r) => r.query === "token=%5BREDACTED%5D&note=%5BREDACTED%5D"));
    });

    test("bodies over the bound are stored truncated with a marker", async () => {
      const { acme, call } = env();
      const description = "é".repeat(1500); // 3000 bytes in UTF-8
      const res = await call(acme.adminKey, "POST", "/v2/projects", {
        key: "wordy",
        name: "Wordy",
        description,
      });
      assert.equal(res.status, 200, res.body as string);
      const [event] = await history(env(), acme.adminKey, "&method=POST&status_code=200");
      const full = (await call(acme.adminKey, "GET", `/v2/history/${event!.id}`)).json;
      for (const body of [full.request_body, full.response_body] as string[]) {
        assert.match(body, /…\[truncated by Gatehouse: \d+ bytes in total\]$/);
        const head = body.slice(0, body.indexOf("…[truncated"));
        assert.ok(Buffer.byteLength(head) <= MAX_BODY_BYTES);
        assert.ok(Buffer.byteLength(head) > MAX_BODY_BYTES - 4);
        assert.ok(!head.includes("\uFFFD"), "never cut inside a character");
      }
      assert.match(full.request_body, /^\{"key":"wordy"/);
    });

    test("a large response body is stored compressed, secrets redacted, and read back as text", async () => {
      const { acme, call, store } = env();
      const lookalike = `gh_${"B".repeat(43)}`;
      const description = `${lookalike} ${"x".repeat(3000)}`;
      const res = await call(acme.adminKey, "POST", "/v2/projects", {
        key: "roomy",
        name: "Roomy",
        description,
      });
      assert.equal(res.status, 200, res.body as string);
      assert.equal((await call(acme.adminKey, "GET", "/v2/projects/roomy-not-here")).status, 404);
      await flushLog(env());
      const rows = await store.db
        .selectFrom("api_log")
        .select(["id", "method", "path", "status", "response_body", "response_body_gzip"])
        .where("path", "in", ["/v2/projects", "/v2/projects/roomy-not-here"])
        .where("organization_id", "=", acme.id)
        .execute();
      const created = rows.find((r) => r.method === "POST" && r.status === 200 && r.response_body === null);
      assert.ok(created?.response_body_gzip, "the large body is kept compressed, not as text");
      const text = await gunzipText(created.response_body_gzip);
      assert.ok(text.length > 2048 && text.length < 2200, "bounded before it was compressed");
      assert.ok(created.response_body_gzip.length < text.length / 4);
      assert.ok(
        !text.includes(lookalike) && text.includes("[REDACTED]"),
        "redacted before it was compressed",
      );
      // a small body stays text
      const missing = rows.find((r) => r.path === "/v2/projects/roomy-not-here");
      assert.equal(missing?.response_body_gzip, null);
      assert.equal(JSON.parse(missing?.response_body ?? "{}").error_code, "NOT_FOUND");

      const full = await call(acme.adminKey, "GET", `/v2/history/${created.id}`);
      assert.equal(full.status, 200);
      assert.equal(full.json.response_body, text);
      const response = await call(acme.adminKey, "GET", `/v2/history/${created.id}/response`);
      assert.equal(response.json, text);
    });

    test("with GATEHOUSE_API_LOG=off nothing is recorded, and the history still answers", async () => {
      const { acme, store, box } = env();
      const app = await buildTestApp(store, box, { apiLog: "off" });
      const headers = { authorization: `Bearer ${acme.adminKey}` };
      try {
        const res = await app.inject({ method: "GET", url: "/v2/projects/unlogged", headers });
        assert.equal(res.statusCode, 404);
        const listed = await app.inject({
          method: "GET",
          url: "/v2/history?path=/v2/projects/unlogged",
          headers,
        });
        assert.equal(listed.statusCode, 200);
        assert.equal(listed.json().total_count, 0);
        await app.apiLog.flush();
      } finally {
        await app.close();
      }
      const rows = await store.db
        .selectFrom("api_log")
        .select("id")
        .where("path", "=", "/v2/projects/unlogged")
        .execute();
      assert.equal(rows.length, 0);
    });
  },
  { apiLogFlushMs: 20, apiLogMaxBodyBytes: MAX_BODY_BYTES },
);
