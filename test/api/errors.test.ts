import { test } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";

const assertErrorBody = (json: Record<string, unknown>, code: string) => {
  assert.equal(json["error_code"], code);
  for (const field of ["id", "title", "message", "support_link"]) {
    assert.equal(typeof json[field], "string", `${field} in ${JSON.stringify(json)}`);
  }
  assert.doesNotMatch(JSON.stringify(json), /at .*\.ts:\d+|SELECT|INSERT|sqlite|postgres/i);
};

describeEachDialect("error bodies", (env) => {
  test("malformed JSON is a 422 with detail and changes nothing", async () => {
    const { acme, app } = env();
    const res = await app.inject({
      method: "POST",
      url: "/v2/projects",
      headers: { authorization: `Bearer ${acme.adminKey}`, "content-type": "application/json" },
      payload: '{"key": "broken", ',
    });
    assert.equal(res.statusCode, 422);
    assertErrorBody(res.json(), "INVALID_INPUT");
    assert.ok(Array.isArray(res.json().detail));
    const rows = await env()
      .store.db.selectFrom("projects")
      .select("key")
      .where("key", "=", "broken")
      .execute();
    assert.equal(rows.length, 0);
  });

  test("wrong types, missing fields and bad keys are 422 with the location of the problem", async () => {
    const { acme, call } = env();
    const cases: [unknown, string][] = [
      [{ key: 42, name: "x" }, "key"],
      [{ name: "no key" }, "key"],
      [{ key: "has space", name: "x" }, "key"],
      [{ key: "ok", name: "" }, "name"],
      [{ key: "ok", name: "x".repeat(300) }, "name"],
      [{ key: "ok", name: "x", settings: "not an object" }, "settings"],
    ];
    for (const [body, field] of cases) {
      const res = await call(acme.adminKey, "POST", "/v2/projects", body);
      assert.equal(res.status, 422, JSON.stringify(body));
      assertErrorBody(res.json, "INVALID_INPUT");
      assert.ok(
        res.json.detail.some((d: { loc: string[] }) => d.loc[0] === "body" && d.loc.includes(field)),
        JSON.stringify(res.json.detail),
      );
    }
    const bad = await call(acme.adminKey, "GET", "/v2/projects?per_page=101");
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.json.detail[0].loc, ["query", "per_page"]);
    assert.equal((await call(acme.adminKey, "GET", "/v2/projects?page=0")).status, 422);
    assert.equal((await call(acme.adminKey, "GET", "/v2/projects?page=abc")).status, 422);
  });

  test("oversized bodies are 413, other media types 415", async () => {
    const { acme, app } = env();
    const headers = { authorization: `Bearer ${acme.adminKey}`, "content-type": "application/json" };
    const big = JSON.stringify({ key: "big", name: "x", settings: { blob: "x".repeat(2 * 1024 * 1024) } });
    const tooLarge = await app.inject({ method: "POST", url: "/v2/projects", headers, payload: big });
    assert.equal(tooLarge.statusCode, 413);
    assertErrorBody(tooLarge.json(), "PAYLOAD_TOO_LARGE");
    const xml = await app.inject({
      method: "POST",
      url: "/v2/projects",
      headers: { ...headers, "content-type": "application/xml" },
      payload: "<project/>",
    });
    assert.equal(xml.statusCode, 415);
    assertErrorBody(xml.json(), "UNSUPPORTED_MEDIA_TYPE");
  });

  test("unknown routes are 404, known routes with another method 405", async () => {
    const { acme, call, app } = env();
    const unknown = await call(acme.adminKey, "GET", "/v2/nothing/here");
    assert.equal(unknown.status, 404);
    assertErrorBody(unknown.json, "NOT_FOUND");
    const outside = await app.inject({ method: "GET", url: "/nothing" });
    assert.equal(outside.statusCode, 404);
    assertErrorBody(outside.json(), "NOT_FOUND");
    const wrongMethod = await call(acme.adminKey, "PUT", "/v2/projects");
    assert.equal(wrongMethod.status, 405);
    assertErrorBody(wrongMethod.json, "METHOD_NOT_ALLOWED");
    assert.match(String(wrongMethod.headers["allow"]), /GET/);
  });

  test("an empty body on a route without one is accepted", async () => {
    const { acme, app } = env();
    const res = await app.inject({
      method: "GET",
      url: "/v2/projects",
      headers: { authorization: `Bearer ${acme.adminKey}`, "content-type": "application/json" },
      payload: "",
    });
    assert.equal(res.statusCode, 200);
  });

  test("health and readiness", async () => {
    const { app } = env();
    assert.deepEqual((await app.inject({ url: "/healthz" })).json(), { status: "ok" });
    assert.equal((await app.inject({ url: "/readyz" })).statusCode, 200);
  });

  test("support_link leads to a readable page with the code's anchor; JSON stays for clients", async () => {
    const { app } = env();
    const res = await app.inject({ url: "/v2/projects" });
    const link = new URL(res.json().support_link);
    assert.equal(link.pathname, "/errors");
    assert.equal(link.hash, "#UNAUTHORIZED");

    const browser = await app.inject({
      url: "/errors",
      headers: { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" },
    });
    assert.equal(browser.statusCode, 200);
    assert.match(String(browser.headers["content-type"]), /^text\/html/);
    for (const code of ["UNAUTHORIZED", "FORBIDDEN_ACCESS", "TOO_MANY_REQUESTS", "UNEXPECTED_ERROR"]) {
      assert.match(browser.body, new RegExp(`<section id="${code}">`), `an anchor for ${code}`);
    }
    assert.match(browser.body, /gatehouse keys create/);

    for (const accept of [undefined, "application/json", "*/*"]) {
      const json = await app.inject({ url: "/errors", headers: accept ? { accept } : {} });
      assert.match(String(json.headers["content-type"]), /^application\/json/, `Accept: ${accept}`);
      const unauthorized = json.json().find((e: { error_code: string }) => e.error_code === "UNAUTHORIZED");
      assert.equal(unauthorized.status, 401);
      assert.equal(typeof unauthorized.help, "string");
    }
  });
});
