import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import { post, startTestPdp, type TestPdp } from "../helpers/pdp.ts";

// Permit answers `application/json` with no charset (RFC 8259 defines none), and Permit's Python SDK tests read
// the header as it is (tests/endpoints/test_error_response.py of permitio/permit-python).
describeEachDialect("JSON answers are application/json, on every port", (env) => {
  let pdp: TestPdp;
  let envKey = "";

  before(async () => {
    const { acme, call } = env();
    envKey = (await call(acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    pdp = await startTestPdp(env());
  });
  after(() => pdp.close());

  test("answers and errors of the control plane", async () => {
    const { acme, call } = env();
    const answers = [
      await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: "ct" }),
      await call(acme.adminKey, "GET", "/v2/facts/default/production/users/ct"),
      await call(acme.adminKey, "GET", "/v2/facts/default/production/users/nobody"),
      await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: 5 }),
      await call(null, "GET", "/v2/api-key/scope"),
      await call(acme.adminKey, "GET", "/v2/no-such-route"),
    ];
    assert.deepEqual(
      answers.map((a) => [a.status, a.headers["content-type"]]),
      [201, 200, 404, 422, 401, 404].map((status) => [status, "application/json"]),
    );
  });

  test("checks and errors of the PDP, on its fast path and through Fastify", async () => {
    const check = { user: { key: "ct" }, action: "read", resource: { type: "document", tenant: "default" } };
    const answers = [
      await post(`${pdp.url}/allowed`, envKey, check),
      await post(`${pdp.url}/allowed/bulk`, envKey, [check]),
      await post(`${pdp.url}/user-permissions`, envKey, { user: { key: "ct" } }),
      await post(`${pdp.url}/allowed`, null, check),
      await post(`${pdp.url}/allowed`, envKey, "{"),
      await post(`${pdp.opaUrl}/v1/data/permit/root`, envKey, { input: check }),
    ];
    assert.deepEqual(
      answers.map((a) => [a.status, a.headers["content-type"]]),
      [200, 200, 200, 401, 422, 200].map((status) => [status, "application/json"]),
    );
  });
});
