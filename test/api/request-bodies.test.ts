import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import type { FastifyInstance } from "fastify";
import { describeEachDialect, type Reply } from "../helpers/app.ts";
import { post, startTestPdp, type TestPdp } from "../helpers/pdp.ts";
import { MAX_BODY_DEPTH } from "../../src/http/json-body.ts";

/** Objects nested `depth` deep ({"a":{"a":...}}), or arrays with `arrays`. */
const nested = (depth: number, arrays = false) =>
  arrays ? "[".repeat(depth) + "]".repeat(depth) : '{"a":'.repeat(depth - 1) + "{}" + "}".repeat(depth - 1);

/** One upload over a raw socket that writes its whole body before reading the answer, as many clients do. */
function uploadThenRead(
  port: number,
  path: string,
  key: string,
  size: number,
  chunked = false,
): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    const timer = setTimeout(() => {
      socket.destroy();
      resolve("timed out");
    }, 60_000);
    let answer = "";
    const done = (outcome: string) => {
      clearTimeout(timer);
      resolve(outcome);
    };
    socket.pause();
    socket.on("data", (chunk) => (answer += chunk.toString("latin1")));
    socket.on("end", () => done(answer));
    socket.on("error", (error: NodeJS.ErrnoException) => done(`${error.code ?? "error"} after: ${answer}`));
    const length = chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${size}`;
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: application/json\r\n${length}\r\n\r\n`,
    );
    const body = Buffer.alloc(size, 0x20);
    const framed = chunked
      ? Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), body, Buffer.from("\r\n0\r\n\r\n")])
      : body;
    socket.write(framed, (error) => {
      if (error) done(`write failed: ${error.message}`);
      else socket.resume();
    });
  });
}

async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  return typeof address === "object" && address ? address.port : 0;
}

/** An HTTP reply in the shape of Fastify's inject response, which the control plane's share of these tests gets. */
const asInjected = (reply: Reply) => ({
  statusCode: reply.status,
  body: reply.body,
  json: () => reply.json,
});

describeEachDialect("request bodies on every port", (env) => {
  let pdp: TestPdp;
  let envKey = "";

  before(async () => {
    const { acme, call } = env();
    envKey = (await call(acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    pdp = await startTestPdp(env());
  });
  after(() => pdp.close());

  /** Sends the same raw body to the control plane and to both PDP ports. */
  const everywhere = async (payload: Buffer | string) => {
    const { app, acme } = env();
    const headers = { "content-type": "application/json" };
    return {
      controlPlane: await app.inject({
        method: "POST",
        url: "/v2/facts/default/production/users",
        headers: { ...headers, authorization: `Bearer ${acme.adminKey}` },
        payload,
      }),
      // The PDP ports over real HTTP: a plain check is answered without Fastify (src/pdp/http/fast-path.ts).
      pdp: asInjected(await post(`${pdp.url}/allowed`, envKey, payload)),
      opa: asInjected(await post(`${pdp.opaUrl}/v1/data/permit/root`, envKey, payload)),
    };
  };

  test("a body nested deeper than the limit is a 422 naming the limit, on every port", async () => {
    // The body itself is one level: attributes nested MAX_BODY_DEPTH deep make it one too many.
    const deep = `{"key":"too-deep","attributes":${nested(MAX_BODY_DEPTH)}}`;
    const ok = await env().call(env().acme.adminKey, "POST", "/v2/facts/default/production/users", {
      key: "deep",
      attributes: JSON.parse(nested(MAX_BODY_DEPTH - 1)),
    });
    assert.equal(ok.status, 201, ok.body);
    const deepArrays = `{"key":"too-deep-arrays","attributes":{"a":${nested(MAX_BODY_DEPTH - 1, true)}}}`;
    for (const body of [deep, deepArrays, `{"key":"deeper","attributes":${nested(5000)}}`]) {
      for (const [port, res] of Object.entries(await everywhere(body))) {
        assert.equal(res.statusCode, 422, `${port}: ${res.body}`);
        const json = res.json();
        assert.equal(json.error_code, "INVALID_INPUT");
        assert.match(json.message, new RegExp(`deeper than ${MAX_BODY_DEPTH}`));
        assert.equal(json.additional_info.max_depth, MAX_BODY_DEPTH);
        assert.deepEqual(json.detail[0].loc, ["body"]);
      }
    }
    // Brackets inside strings are text, not nesting.
    const text = await env().call(env().acme.adminKey, "POST", "/v2/facts/default/production/users", {
      key: "brackets",
      first_name: "[{".repeat(100),
    });
    assert.equal(text.status, 201, text.body);
  });

  test("a body that is not valid UTF-8 is a 400, on every port, and nothing is stored", async () => {
    const prefix = Buffer.from('{"key":"bad-utf8","first_name":"');
    for (const invalid of [[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
      const body = Buffer.concat([prefix, Buffer.from(invalid), Buffer.from('"}')]);
      for (const [port, res] of Object.entries(await everywhere(body))) {
        assert.equal(res.statusCode, 400, `${port} ${invalid.join(",")}: ${res.body}`);
        assert.equal(res.json().error_code, "INVALID_ENCODING");
      }
    }
    const { acme, call } = env();
    assert.equal(
      (await call(acme.adminKey, "GET", "/v2/facts/default/production/users/bad-utf8")).status,
      404,
    );
    const valid = await call(acme.adminKey, "POST", "/v2/facts/default/production/users", {
      key: "good-utf8",
      first_name: "Zoë 名前 🙂",
    });
    assert.equal(valid.status, 201);
    assert.equal(valid.json.first_name, "Zoë 名前 🙂");
  });

  test("concurrent uploads over the limit each read a 413 JSON body (control plane and PDP)", async () => {
    const { acme } = env();
    // The test app accepts 1 MiB; the PDP its default 8 MiB.
    const cpPort = await listen(env().app);
    const pdpPort = Number(new URL(pdp.url).port);
    const uploads = [
      ...Array.from({ length: 6 }, () =>
        uploadThenRead(cpPort, "/v2/facts/default/production/users", acme.adminKey, 16 * 1024 * 1024),
      ),
      ...Array.from({ length: 3 }, () => uploadThenRead(pdpPort, "/allowed", envKey, 24 * 1024 * 1024)),
      // without Content-Length: found too large while reading
      ...Array.from({ length: 3 }, () =>
        uploadThenRead(cpPort, "/v2/facts/default/production/users", acme.adminKey, 16 * 1024 * 1024, true),
      ),
    ];
    for (const answer of await Promise.all(uploads)) {
      assert.match(answer, /^HTTP\/1\.1 413 /, answer.slice(0, 200));
      assert.match(answer, /\r\nconnection: close\r\n/i);
      const json = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));
      assert.equal(json.error_code, "PAYLOAD_TOO_LARGE");
    }
  });
});
