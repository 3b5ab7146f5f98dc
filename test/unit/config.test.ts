import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { ConfigError, loadConfig, SETTINGS, unknownVariableWarnings } from "../../src/config.ts";

test("defaults match the architecture's configuration table", () => {
  const c = loadConfig([], {});
  assert.equal(c.host, "127.0.0.1");
  assert.equal(c.apiPort, 8000);
  assert.equal(c.pdpPort, 7766);
  assert.equal(c.opaPort, 8181);
  assert.equal(c.dataDir, path.resolve("./data"));
  assert.equal(c.databaseUrl, undefined);
  assert.equal(c.redisUrl, undefined);
  assert.equal(c.rateLimitPerMinute, 1000);
  assert.equal(c.logLevel, "info");
  assert.equal(c.publicUrl, "http://127.0.0.1:8000");
});

test("every setting works as an environment variable and as a flag, and the flag wins", () => {
  const sample: Record<string, string> = {
    host: "0.0.0.0",
    apiPort: "9000",
    pdpPort: "0",
    opaPort: "9181",
    dataDir: "/tmp/gh",
    databaseUrl: "postgres://u@h/db",
    redisUrl: "redis://127.0.0.1:6379",
    bootstrapApiKey: "b".repeat(32),
    rateLimitPerMinute: "120",
    logLevel: "debug",
    publicUrl: "https://gatehouse.example",
    secretKey: "s".repeat(32),
    apiLog: "off",
    decisionLog: "off",
    smtpUrl: "smtp://mail.example:25",
    region: "eu",
    regions: "us=https://api.example,eu=https://api.eu.example",
    bootstrapAdminEmail: "owner@example.test",
    bootstrapAdminPassword: "a long bootstrap passphrase",
    logExportLogs: "api",
    logExportHttpUrl: "https://siem.example/ingest",
    logExportHttpFormat: "json",
    logExportOtlp: "on",
    webhookAllowPrivateUrls: "true",
  };
  // settings that go in pairs: the other half is set too
  const partner: Record<string, Record<string, string>> = {
    bootstrapAdminEmail: { GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD: "another long passphrase" },
    bootstrapAdminPassword: { GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL: "owner@example.test" },
  };
  for (const s of SETTINGS) {
    const value = sample[s.key] ?? (s.kind === "string" ? "x".repeat(40) : "7");
    const expected = s.kind === "string" ? value : Number(value);
    const pair = partner[s.key] ?? {};
    assert.equal(loadConfig([], { ...pair, [s.env]: value })[s.key], expected, s.env);
    assert.equal(loadConfig([`--${s.flag}`, value], pair)[s.key], expected, `--${s.flag}`);
    const other = s.kind === "string" ? `${value}-env` : "8";
    assert.equal(
      loadConfig([`--${s.flag}`, value], { ...pair, [s.env]: other })[s.key],
      expected,
      `--${s.flag} wins`,
    );
  }
});

test("regions: names and base URLs, each region once", () => {
  const config = loadConfig(["--region", "eu"], {
    GATEHOUSE_REGIONS: " us = https://api.example/ ,eu=http://10.0.0.2:8000",
  });
  assert.equal(config.region, "eu");
  assert.deepEqual(config.regionUrls, { us: "https://api.example", eu: "http://10.0.0.2:8000" });
  assert.deepEqual(loadConfig([], {}).regionUrls, {}, "by default one region, served at the public URL");
  assert.throws(() => loadConfig(["--region", "EU_1"], {}), /GATEHOUSE_REGION must be/);
  assert.throws(() => loadConfig([], { GATEHOUSE_REGIONS: "eu:https://x" }), /name=url pairs/);
  assert.throws(() => loadConfig([], { GATEHOUSE_REGIONS: "eu=ftp://x" }), /name=url pairs/);
  assert.throws(() => loadConfig([], { GATEHOUSE_REGION_SECRET: "short" }), /at least 32/);
});

test("invalid settings are clear errors", () => {
  assert.throws(
    () => loadConfig([], { GATEHOUSE_LOG_EXPORT_LOGS: "decision,audit" }),
    /decision, api or both/,
  );
  assert.throws(() => loadConfig([], { GATEHOUSE_LOG_EXPORT_HTTP_FORMAT: "xml" }), /"ndjson" or "json"/);
  assert.throws(
    () => loadConfig([], { GATEHOUSE_LOG_EXPORT_HTTP_URL: "ftp://x" }),
    /http:\/\/ or https:\/\//,
  );
  assert.throws(() => loadConfig([], { GATEHOUSE_LOG_EXPORT_OTLP: "yes" }), /"on" or "off"/);
  assert.throws(() => loadConfig(["--api-port", "70000"], {}), ConfigError);
  assert.throws(() => loadConfig([], { GATEHOUSE_RATE_LIMIT_PER_MINUTE: "-1" }), /non-negative integer/);
  assert.throws(
    () => loadConfig([], { GATEHOUSE_RATE_LIMIT_PER_MINUTE: "59" }),
    /GATEHOUSE_RATE_LIMIT_PER_MINUTE must be at least 60/,
  );
  assert.equal(loadConfig(["--rate-limit-per-minute", "60"], {}).rateLimitPerMinute, 60);
  assert.throws(() => loadConfig([], { GATEHOUSE_BOOTSTRAP_API_KEY: "short" }), /at least 32/);
  assert.throws(() => loadConfig([], { DATABASE_URL: "mysql://x" }), /postgres/);
  assert.throws(() => loadConfig([], { GATEHOUSE_LOG_LEVEL: "loud" }), /GATEHOUSE_LOG_LEVEL/);
  assert.throws(() => loadConfig(["--no-such-flag", "1"], {}));
  assert.throws(() => loadConfig([], { GATEHOUSE_API_LOG: "maybe" }), /GATEHOUSE_API_LOG must be/);
  assert.throws(() => loadConfig(["--api-log-max-body-bytes", "0"], {}), /at least 1/);
  assert.throws(() => loadConfig([], { GATEHOUSE_SMTP_URL: "http://mail" }), /smtp:\/\//);
  assert.throws(() => loadConfig([], { GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL: "a@b.c" }), /set both or neither/);
  assert.throws(() => loadConfig(["--session-idle-minutes", "0"], {}), /at least 1/);
});

test("the first start's owner is checked as the members API checks a member: before anything is created", () => {
  const owner = (email: string, password: string) =>
    loadConfig([], { GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL: email, GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD: password });
  assert.equal(
    owner("owner@example.test", "a long bootstrap passphrase").bootstrapAdminEmail,
    "owner@example.test",
  );
  for (const email of [
    "notanemail",
    "owner@",
    "@example.test",
    "owner@example.test ",
    `${"o".repeat(250)}@example.test`,
  ]) {
    assert.throws(
      () => owner(email, "a long bootstrap passphrase"),
      (e: Error) =>
        e instanceof ConfigError &&
        /GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL must be an e-mail address/.test(e.message),
      email,
    );
  }
  assert.throws(
    () => owner("owner@example.test", "short"),
    /GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD: a password needs at least 12/,
  );
  assert.throws(
    () => owner("owner@example.test", "password1234"),
    /GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD: this password is too common/,
  );
});

test("an unknown GATEHOUSE_* variable is named with the nearest known one; others are left alone", () => {
  assert.deepEqual(
    unknownVariableWarnings({
      GATEHOUSE_APIPORT: "9000",
      GATEHOUSE_RATE_LIMIT_PER_MINUTES: "100",
      GATEHOUSE_SOMETHING_ELSE_ENTIRELY: "1",
      GATEHOUSE_API_PORT: "8000",
      GATEHOUSE_MEMBER_PASSWORD: "x",
      DATABASE_URL: "postgres://x",
      HOME: "/root",
    }),
    [
      "GATEHOUSE_APIPORT is not a Gatehouse setting and is ignored; did you mean GATEHOUSE_API_PORT?",
      "GATEHOUSE_RATE_LIMIT_PER_MINUTES is not a Gatehouse setting and is ignored; did you mean GATEHOUSE_RATE_LIMIT_PER_MINUTE?",
      "GATEHOUSE_SOMETHING_ELSE_ENTIRELY is not a Gatehouse setting and is ignored",
    ],
  );
  assert.deepEqual(unknownVariableWarnings(Object.fromEntries(SETTINGS.map((s) => [s.env, "1"]))), []);
});
