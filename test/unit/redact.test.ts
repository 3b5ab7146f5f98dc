import { test } from "node:test";
import assert from "node:assert/strict";
import {
  isSensitiveName,
  redactJsonText,
  redactQuery,
  redactText,
  secretValues,
  truncateText,
} from "../../src/lib/redact.ts";

const KEY = `gh_${"k".repeat(43)}`;

const SENSITIVE_NAMES = [
  "secret",
  "api_key_secret",
  "password",
  "client_secret",
  "access_token",
  "refresh_token",
  "clientSecret",
  "accessToken",
  "apiKey",
  "private_key",
  "Authorization",
  "x-api-key",
  "apikey",
  "credentials",
  "invite_code",
  "inviteCode",
  "csrf_token",
  "setup_token",
  "current_password",
  "new_password",
  "privateKey",
  "passphrase",
  "session_cookie",
];

test("field names that look like secrets, and only those", () => {
  for (const name of SENSITIVE_NAMES) {
    assert.ok(isSensitiveName(name), name);
  }
  for (const name of [
    "api_key_id",
    "apiKeyId",
    "token_type",
    "secret_prefix",
    "name",
    "key",
    "jwks",
    "tokens_used",
    "error_code",
    "code",
  ]) {
    assert.ok(!isSensitiveName(name), name);
  }
});

test("JSON bodies: values of secret fields at any depth, and secret values anywhere", () => {
  const secrets = secretValues("my-custom-bootstrap-key-0123456789");
  const body = JSON.stringify({
    id: "k1",
    secret: KEY,
    nested: [{ password: 123, note: `uses ${KEY}` }, { client_secret: { a: 1 } }],
    name: "my-custom-bootstrap-key-0123456789",
    empty: { token: null },
  });
  assert.deepEqual(JSON.parse(redactJsonText(body, secrets)), {
    id: "k1",
    secret: "[REDACTED]",
    nested: [{ password: "[REDACTED]", note: "uses [REDACTED]" }, { client_secret: "[REDACTED]" }],
    name: "[REDACTED]",
    empty: { token: null },
  });
  const clean = JSON.stringify({ key: "a", name: "b" });
  assert.equal(redactJsonText(clean, secrets), clean, "text without hints is kept as it is");
  assert.equal(redactJsonText(`not json ${KEY}`, []), "not json [REDACTED]");
});

test("JSON bodies: a field of every secret-looking name is redacted, whatever its value looks like", () => {
  for (const name of SENSITIVE_NAMES) {
    const body = JSON.stringify({ id: 1, [name]: "plain value" });
    assert.deepEqual(JSON.parse(redactJsonText(body, [])), { id: 1, [name]: "[REDACTED]" }, name);
  }
});

test("query strings and paths", () => {
  const secrets = secretValues("custom/key with spaces");
  assert.equal(redactQuery("page=2&per_page=10", secrets), "page=2&per_page=10");
  assert.equal(redactQuery(`token=abc&q=${KEY}`, []), "token=%5BREDACTED%5D&q=%5BREDACTED%5D");
  assert.equal(redactQuery(`k=${encodeURIComponent("custom/key with spaces")}`, secrets), "k=%5BREDACTED%5D");
  assert.equal(redactText(`/v2/api-key/${KEY}`, []), "/v2/api-key/[REDACTED]");
  // A key that names its region is redacted whole, the region included.
  assert.equal(redactText(`/v2/api-key/gh_eu_${"k".repeat(40)}_-9`, []), "/v2/api-key/[REDACTED]");
  assert.equal(
    redactText(`/v2/x/${encodeURIComponent("custom/key with spaces")}`, secrets),
    "/v2/x/[REDACTED]",
  );
  assert.deepEqual(secretValues("short"), [], "too short to hide safely");
});

test("truncation keeps whole characters and says how long the original was", () => {
  assert.equal(truncateText("abc", 3), "abc");
  assert.equal(truncateText("abcdef", 3), "abc…[truncated by Gatehouse: 6 bytes in total]");
  assert.equal(truncateText("ééé", 3), "é…[truncated by Gatehouse: 6 bytes in total]");
});
