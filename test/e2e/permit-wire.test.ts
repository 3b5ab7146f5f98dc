// What Permit's other SDKs send, pinned over real HTTP: the Python SDK writes the Authorization scheme in lower
// case (`bearer <key>`), and RFC 7235 makes the scheme case-insensitive with one or more spaces before the token.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  freePort,
  httpOk,
  startPdpProcess,
  startServerProcess,
  type ServerProcess,
} from "../helpers/process.ts";

const BOOTSTRAP = "permit-wire-e2e-bootstrap-key-000000000";
const REGION_SECRET = "permit-wire-e2e-region-secret-0000000000";

/** Ways clients write the scheme; each must be accepted on every port. */
const SCHEMES = ["bearer ", "BEARER ", "bEaReR ", "Bearer   "];
/** Headers that stay a 401 (or, on the region route, a 404): no token, or another scheme. */
const MALFORMED = (secret: string) => ["bearer", `Bearer${secret}`, `Basic ${secret}`, `bearer\t${secret}`];

async function status(url: string, authorization: string, body?: unknown, method = "POST"): Promise<number> {
  const res = await fetch(url, {
    method,
    headers: { authorization, "content-type": "application/json" },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  await res.text();
  return res.status;
}

const CHECK = { user: { key: "alice" }, action: "read", resource: { type: "document", tenant: "default" } };

test("Authorization: the Bearer scheme in any case, with one or more spaces, on every port", async () => {
  const cpDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-wire-"));
  const pdpDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-wire-pdp-"));
  const procs: ServerProcess[] = [];
  try {
    const opaPort = await freePort();
    const cp = await startServerProcess(
      {
        GATEHOUSE_DATA_DIR: cpDir,
        GATEHOUSE_BOOTSTRAP_API_KEY: BOOTSTRAP,
        GATEHOUSE_OPA_PORT: String(opaPort),
        GATEHOUSE_REGION_SECRET: REGION_SECRET,
      },
      [],
      { pdp: true },
    );
    procs.push(cp);
    const key = (await httpOk(cp.baseUrl, BOOTSTRAP, "GET", "/v2/api-key/default/production")).json
      .secret as string;
    const pdp = `http://127.0.0.1:${cp.pdpPort}`;
    const opa = `http://127.0.0.1:${opaPort}`;
    const standalone = await startPdpProcess({
      GATEHOUSE_DATA_DIR: pdpDir,
      GATEHOUSE_CONTROL_PLANE_URL: cp.baseUrl,
      GATEHOUSE_PDP_API_KEY: key,
    });
    procs.push(standalone);

    let n = 0;
    for (const scheme of SCHEMES) {
      const where = `scheme ${JSON.stringify(scheme)}`;
      assert.equal(
        await status(`${cp.baseUrl}/v2/api-key/scope`, scheme + key, undefined, "GET"),
        200,
        where,
      );
      // /allowed is answered on node:http (the fast path), /user-permissions by Fastify.
      assert.equal(await status(`${pdp}/allowed`, scheme + key, CHECK), 200, `PDP /allowed, ${where}`);
      assert.equal(
        await status(`${pdp}/user-permissions`, scheme + key, { user: { key: "alice" } }),
        200,
        `PDP /user-permissions, ${where}`,
      );
      assert.equal(
        await status(`${opa}/v1/data/permit/root`, scheme + key, { input: CHECK }),
        200,
        `OPA, ${where}`,
      );
      assert.equal(
        await status(`${standalone.baseUrl}/allowed`, scheme + key, CHECK),
        200,
        `standalone, ${where}`,
      );
      assert.equal(
        await status(`${cp.baseUrl}/internal/regions/orgs`, scheme + REGION_SECRET, {
          key: `relayed-${n++}`,
          name: "Relayed",
        }),
        200,
        `region relay, ${where}`,
      );
    }

    for (const header of MALFORMED(key)) {
      const where = `header ${JSON.stringify(header)}`;
      assert.equal(await status(`${cp.baseUrl}/v2/api-key/scope`, header, undefined, "GET"), 401, where);
      assert.equal(await status(`${pdp}/allowed`, header, CHECK), 401, `PDP, ${where}`);
      assert.equal(
        await status(`${opa}/v1/data/permit/root`, header, { input: CHECK }),
        401,
        `OPA, ${where}`,
      );
      assert.equal(await status(`${standalone.baseUrl}/allowed`, header, CHECK), 401, `standalone, ${where}`);
    }
    for (const header of MALFORMED(REGION_SECRET)) {
      const body = { key: "never-relayed", name: "Never" };
      assert.equal(await status(`${cp.baseUrl}/internal/regions/orgs`, header, body), 404, header);
    }
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
});
