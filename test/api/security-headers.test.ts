import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { createTestEnv, PUBLIC_URL, type TestEnv } from "../helpers/app.ts";
import { startTestPdp, type TestPdp } from "../helpers/pdp.ts";

// Headers do not depend on the database: one SQLite-backed app, listening, so raw sockets reach Node's parser.
let env: TestEnv;
let pdp: TestPdp;
let apiUrl: string;

before(async () => {
  env = await createTestEnv("sqlite");
  await env.app.listen({ host: "127.0.0.1", port: 0 });
  const address = env.app.server.address();
  apiUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  pdp = await startTestPdp(env);
});

after(async () => {
  await pdp.close();
  await env.app.close();
  await env.store.close();
});

/** Writes `request` as it is and reads until the server closes: the status line, headers and body. */
function raw(url: string, request: string): Promise<{ status: number; headers: string; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.end(request));
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (text += chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const [head = "", body = ""] = text.split("\r\n\r\n");
      resolve({ status: Number(head.split(" ")[1]), headers: head.toLowerCase(), body });
    });
  });
}

test("API answers say nosniff, no referrer and no framing: JSON, errors, /errors and /docs", async () => {
  for (const [path, accept] of [
    ["/v2/projects", "application/json"],
    ["/healthz", "application/json"],
    ["/errors", "text/html"],
    ["/errors", "application/json"],
    ["/docs/static/index.html", "text/html"],
  ] as const) {
    const res = await fetch(apiUrl + path, { headers: { accept } });
    assert.equal(res.headers.get("x-content-type-options"), "nosniff", path);
    assert.equal(res.headers.get("referrer-policy"), "no-referrer", path);
    assert.equal(res.headers.get("x-frame-options"), "DENY", path);
    const policy = res.headers.get("content-security-policy") ?? "";
    assert.match(policy, /frame-ancestors 'none'/, path);
    assert.doesNotMatch(policy, /upgrade-insecure-requests/, `${path}: the server speaks plain HTTP`);
  }
  const page = await fetch(`${apiUrl}/errors`, { headers: { accept: "text/html" } });
  assert.match(page.headers.get("content-security-policy") ?? "", /script-src 'self'(;|$)/);
});

test("what Node's HTTP parser refuses is answered with the error body, on the API and both PDP ports", async () => {
  for (const url of [apiUrl, pdp.url, pdp.opaUrl]) {
    const malformed = await raw(url, "GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n");
    assert.equal(malformed.status, 400, url);
    assert.match(malformed.headers, /content-type: application\/json/);
    const body = JSON.parse(malformed.body);
    assert.equal(body.error_code, "BAD_REQUEST");
    assert.equal(body.support_link, `${PUBLIC_URL}/errors#BAD_REQUEST`);

    const big = `x-filler: ${"a".repeat(20_000)}\r\n`;
    const tooLarge = await raw(url, `GET /healthz HTTP/1.1\r\nHost: x\r\n${big}\r\n`);
    assert.equal(tooLarge.status, 431, url);
    assert.equal(JSON.parse(tooLarge.body).error_code, "HEADERS_TOO_LARGE");
    const head = await raw(url, `HEAD /healthz HTTP/1.1\r\nHost: x\r\n${big}\r\n`);
    assert.equal(head.status, 431, url);
    assert.equal(head.body, "", "no body to a HEAD request");
  }
});
