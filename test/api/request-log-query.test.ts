import { test } from "node:test";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { buildApp } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { createSecretBox } from "../../src/lib/secrets.ts";
import { loggerOptions } from "../../src/http/logging.ts";
import { freshStore } from "../helpers/stores.ts";
import { PUBLIC_URL } from "../helpers/app.ts";

test("request log lines keep no credential carried in a query string, at every level", async () => {
  const store = await freshStore("sqlite");
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const app = await buildApp({
    config: { ...loadConfig([], {}), publicUrl: PUBLIC_URL },
    store,
    box: createSecretBox("test-secret-key-that-is-long-enough-000"),
    logger: { ...(await loggerOptions("trace", false)), stream },
  });
  await app.ready();
  try {
    // the OpenID provider's redirect back: its code and state are credentials (refused here: no sign-in started)
    const callback = await app.inject({
      method: "GET",
      url: "/v2/auth/sso/callback?code=provider-code-0123456789&state=state-value-0123456789&iss=https%3A%2F%2Fidp.test",
    });
    assert.ok(callback.statusCode >= 300, "the callback answered");
    // any other route: a secret-looking parameter is redacted, the rest of the query kept
    await app.inject({
      method: "GET",
      url: "/v2/auth/sso/providers?access_token=bearer-token-0123456789&page=2",
    });
    const logged = lines.filter((line) => line.includes('"req"'));
    assert.ok(logged.length >= 2, "both requests were logged");
    const text = lines.join("");
    for (const secret of ["provider-code-0123456789", "state-value-0123456789", "bearer-token-0123456789"]) {
      assert.ok(!text.includes(secret), `${secret} is not in the log`);
    }
    assert.ok(text.includes('"url":"/v2/auth/sso/callback"'), "the callback's path alone is logged");
    assert.match(text, /"url":"\/v2\/auth\/sso\/providers\?access_token=%5BREDACTED%5D&page=2"/);
  } finally {
    await app.close();
    await store.close();
  }
});
