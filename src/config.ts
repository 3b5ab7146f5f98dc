// Over 500 lines on purpose: SETTINGS is the one list of every setting (variable, flag, default, meaning) that the
// loader, the unknown-variable warnings, `gatehouse --help` and the configuration docs are made from; one table in
// one place is what keeps them in step.
import { parseArgs } from "node:util";
import path from "node:path";
import { assertAcceptablePassword, isMemberEmail } from "./lib/credential-rules.ts";

/** Every setting of the service: each is an environment variable and a `gatehouse` flag of the same name. */
export interface Config {
  host: string;
  apiPort: number;
  pdpPort: number;
  opaPort: number;
  dataDir: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  bootstrapApiKey: string | undefined;
  rateLimitPerMinute: number;
  logLevel: string;
  publicUrl: string;
  secretKey: string | undefined;
  bodyLimitBytes: number;
  apiLogRetentionDays: number;
  taskRetentionDays: number;
  taskLeaseSeconds: number;
  apiLog: string;
  apiLogMaxBodyBytes: number;
  apiLogFlushMs: number;
  decisionLogRetentionDays: number;
  changeRetentionDays: number;
  changeRetentionRevisions: number;
  decisionLog: string;
  decisionLogSpoolBytes: number;
  logExportLogs: string;
  logExportFile: string | undefined;
  logExportFileMaxBytes: number;
  logExportFileKeep: number;
  logExportHttpUrl: string | undefined;
  logExportHttpFormat: string;
  logExportHttpHeaders: string | undefined;
  logExportOtlp: string;
  logExportSpoolBytes: number;
  logExportFlushMs: number;
  pdpIdleMinutes: number;
  pdpListingHistory: number;
  controlPlaneUrl: string | undefined;
  pdpApiKey: string | undefined;
  sessionIdleMinutes: number;
  sessionMaxHours: number;
  inviteExpiryDays: number;
  smtpUrl: string | undefined;
  smtpFrom: string;
  bootstrapAdminEmail: string | undefined;
  bootstrapAdminPassword: string | undefined;
  loginFailuresPerAccount: number;
  loginFailuresPerAddress: number;
  region: string;
  regions: string | undefined;
  regionSecret: string | undefined;
  webhookAllowPrivateUrls: string;
  webhookTimeoutMs: number;
  webhookRetryBaseMs: number;
  webhookRetrySeconds: number;
  /** The regions' public base URLs, from `regions` (this one's is `publicUrl` when it is not listed). */
  regionUrls: Record<string, string>;
}

interface Setting {
  env: string;
  flag: string;
  key: Exclude<keyof Config, "regionUrls">;
  kind: "string" | "port" | "int";
  default?: string;
  /** One line for `gatehouse help`. */
  describe: string;
  /** The meaning in docs/configuration.md (Markdown), which scripts/configuration-doc.ts generates from here. */
  doc: string;
  /** The default as docs/configuration.md shows it, where it is not the literal `default` (or none). */
  docDefault?: string;
}

export const SETTINGS: readonly Setting[] = [
  {
    env: "GATEHOUSE_HOST",
    flag: "host",
    key: "host",
    kind: "string",
    default: "127.0.0.1",
    describe: "address to bind",
    doc: "address to bind",
  },
  {
    env: "GATEHOUSE_API_PORT",
    flag: "api-port",
    key: "apiPort",
    kind: "port",
    default: "8000",
    describe: "control plane port",
    doc: "control plane port",
  },
  {
    env: "GATEHOUSE_PDP_PORT",
    flag: "pdp-port",
    key: "pdpPort",
    kind: "port",
    default: "7766",
    describe: "embedded PDP port (0 turns the embedded PDP off)",
    doc: "embedded PDP port (`0` turns the embedded PDP off)",
  },
  {
    env: "GATEHOUSE_OPA_PORT",
    flag: "opa-port",
    key: "opaPort",
    kind: "port",
    default: "8181",
    describe: "OPA-compatible decision port of the PDP",
    doc: "OPA-compatible decision port of the PDP",
  },
  {
    env: "GATEHOUSE_DATA_DIR",
    flag: "data-dir",
    key: "dataDir",
    kind: "string",
    default: "./data",
    describe: "where the SQLite file and PDP snapshots live",
    doc: "where the SQLite file, the secret key file and PDP snapshots live",
  },
  {
    env: "DATABASE_URL",
    flag: "database-url",
    key: "databaseUrl",
    kind: "string",
    describe: "postgres://... selects PostgreSQL",
    doc: "`postgres://...` selects PostgreSQL instead of SQLite",
  },
  {
    env: "REDIS_URL",
    flag: "redis-url",
    key: "redisUrl",
    kind: "string",
    describe: "shared rate-limit store for several instances",
    doc: "shared rate-limit counters for several instances",
  },
  {
    env: "GATEHOUSE_BOOTSTRAP_API_KEY",
    flag: "bootstrap-api-key",
    key: "bootstrapApiKey",
    kind: "string",
    describe: "organization admin key for the first start (32+ characters)",
    doc: "on first start with an empty store, this value (32+ characters) becomes the first organization's admin key; when unset a key is generated and printed once",
  },
  {
    env: "GATEHOUSE_RATE_LIMIT_PER_MINUTE",
    flag: "rate-limit-per-minute",
    key: "rateLimitPerMinute",
    kind: "int",
    default: "1000",
    describe: "default limit per API key per minute (at least 60)",
    doc: "default limit per API key per minute (60 or more); an organization's `settings.rate_limit_per_minute` overrides it",
  },
  {
    env: "GATEHOUSE_LOG_LEVEL",
    flag: "log-level",
    key: "logLevel",
    kind: "string",
    default: "info",
    describe: "pino level",
    doc: "pino level (`fatal` … `trace`, `silent`)",
  },
  {
    env: "GATEHOUSE_PUBLIC_URL",
    flag: "public-url",
    key: "publicUrl",
    kind: "string",
    describe: "base URL clients reach the API at (used in support links); default http://HOST:API_PORT",
    doc: "base URL clients reach the API at; used in error `support_link`s",
    docDefault: "`http://HOST:API_PORT`",
  },
  {
    env: "GATEHOUSE_SECRET_KEY",
    flag: "secret-key",
    key: "secretKey",
    kind: "string",
    describe:
      "key that encrypts API key secrets at rest (32+ characters); default: generated into DATA_DIR/secret.key",
    doc: "encrypts API key secrets at rest (32+ characters); set the same value on every instance when you run several",
    docDefault: "generated into `DATA_DIR/secret.key`",
  },
  {
    env: "GATEHOUSE_BODY_LIMIT_BYTES",
    flag: "body-limit-bytes",
    key: "bodyLimitBytes",
    kind: "int",
    default: "8388608",
    describe: "largest accepted request body",
    doc: "largest accepted request body (larger: 413)",
  },
  {
    env: "GATEHOUSE_API_LOG_RETENTION_DAYS",
    flag: "api-log-retention-days",
    key: "apiLogRetentionDays",
    kind: "int",
    default: "30",
    describe: "days the API log is kept (0 keeps it forever)",
    doc: "days the API log is kept (`0`: forever)",
  },
  {
    env: "GATEHOUSE_TASK_RETENTION_DAYS",
    flag: "task-retention-days",
    key: "taskRetentionDays",
    kind: "int",
    default: "7",
    describe: "days a finished background task stays readable (0 keeps it forever)",
    doc: "days a finished background task (environment copy) stays readable (`0`: forever)",
  },
  {
    env: "GATEHOUSE_TASK_LEASE_SECONDS",
    flag: "task-lease-seconds",
    key: "taskLeaseSeconds",
    kind: "int",
    default: "30",
    describe:
      "how long a worker's claim on a background task lasts without renewal (renewed every third of it)",
    doc: "how long a worker's claim on a background task lasts unless renewed; a crashed instance's task is taken over after this",
  },
  {
    env: "GATEHOUSE_WEBHOOK_ALLOW_PRIVATE_URLS",
    flag: "webhook-allow-private-urls",
    key: "webhookAllowPrivateUrls",
    kind: "string",
    default: "false",
    describe: "let webhooks send to private, loopback and link-local addresses (true) or not (false)",
    doc: "`true` lets webhook URLs name (or resolve to) private, loopback and link-local addresses; `false` refuses them when a subscription is saved and again at each delivery (SSRF)",
  },
  {
    env: "GATEHOUSE_WEBHOOK_TIMEOUT_MS",
    flag: "webhook-timeout-ms",
    key: "webhookTimeoutMs",
    kind: "int",
    default: "10000",
    describe: "a webhook delivery that has not been answered in this time is cut and counts as failed",
    doc: "how long a webhook receiver has to answer a delivery; past it the attempt is cut and retried later",
  },
  {
    env: "GATEHOUSE_WEBHOOK_RETRY_BASE_MS",
    flag: "webhook-retry-base-ms",
    key: "webhookRetryBaseMs",
    kind: "int",
    default: "5000",
    describe: "wait before a failed webhook delivery's first retry; each next wait doubles, up to an hour",
    doc: "wait before a failed webhook delivery's first retry; each next wait doubles (with jitter), up to an hour",
  },
  {
    env: "GATEHOUSE_WEBHOOK_RETRY_SECONDS",
    flag: "webhook-retry-seconds",
    key: "webhookRetrySeconds",
    kind: "int",
    default: "86400",
    describe: "how long a webhook delivery is retried; then it fails and its subscription is disabled",
    doc: "how long a failed webhook delivery is retried; a delivery that still fails after it is given up and its subscription is disabled (it failed all that time)",
  },
  {
    env: "GATEHOUSE_API_LOG",
    flag: "api-log",
    key: "apiLog",
    kind: "string",
    default: "on",
    describe: "record every /v2 call in the API log (on) or not (off)",
    doc: "`off` records no calls (history and retention still work)",
  },
  {
    env: "GATEHOUSE_API_LOG_MAX_BODY_BYTES",
    flag: "api-log-max-body-bytes",
    key: "apiLogMaxBodyBytes",
    kind: "int",
    default: "65536",
    describe: "request and response bodies larger than this are stored truncated in the API log",
    doc: "request and response bodies past this are stored truncated in the API log",
  },
  {
    env: "GATEHOUSE_API_LOG_FLUSH_MS",
    flag: "api-log-flush-ms",
    key: "apiLogFlushMs",
    kind: "int",
    default: "100",
    describe: "how often queued API log records are written (also at 500 queued, and on shutdown)",
    doc: "how often queued API log records are written (also at 500 queued, and on shutdown)",
  },
  {
    env: "GATEHOUSE_DECISION_LOG_RETENTION_DAYS",
    flag: "decision-log-retention-days",
    key: "decisionLogRetentionDays",
    kind: "int",
    default: "30",
    describe: "days the PDP decision log is kept (0 keeps it forever)",
    doc: "days the PDP decision log is kept (`0`: forever)",
  },
  {
    env: "GATEHOUSE_CHANGE_RETENTION_DAYS",
    flag: "change-retention-days",
    key: "changeRetentionDays",
    kind: "int",
    default: "7",
    describe: "days the change feed keeps an environment's changes (0 keeps them forever)",
    doc: "days the change feed keeps an environment's changes, for the change stream and PDPs that fall behind (`0`: forever); older: 410 `REVISION_GONE`, and a PDP loads a snapshot ([events](events.md))",
  },
  {
    env: "GATEHOUSE_CHANGE_RETENTION_REVISIONS",
    flag: "change-retention-revisions",
    key: "changeRetentionRevisions",
    kind: "int",
    default: "1000",
    describe: "the changes of each environment's last revisions that the feed keeps however old",
    doc: "the changes of each environment's last revisions that the feed keeps however old, so a quiet environment's readers can always resume",
  },
  {
    env: "GATEHOUSE_DECISION_LOG",
    flag: "decision-log",
    key: "decisionLog",
    kind: "string",
    default: "on",
    describe: "record every PDP decision in the decision log (on) or not (off)",
    doc: "record every PDP decision in the decision log (`on`) or not (`off`)",
  },
  {
    env: "GATEHOUSE_DECISION_LOG_SPOOL_BYTES",
    flag: "decision-log-spool-bytes",
    key: "decisionLogSpoolBytes",
    kind: "int",
    default: "104857600",
    describe:
      "gatehouse pdp: bytes of decision log kept on disk while the control plane is unreachable (oldest dropped first; 0 keeps none)",
    doc: "`gatehouse pdp`: bytes of decision log kept on disk while the control plane is away; past it the oldest are dropped (`0`: none)",
  },
  {
    env: "GATEHOUSE_LOG_EXPORT_LOGS",
    flag: "log-export-logs",
    key: "logExportLogs",
    kind: "string",
    default: "decision,api",
    describe: "which logs the log export sinks receive: decision, api, or both (comma-separated)",
    doc: "which logs the [log export](observability.md#log-export) sinks receive: `decision`, `api`, or both (comma-separated)",
  },
  {
    env: "GATEHOUSE_LOG_EXPORT_FILE",
    flag: "log-export-file",
    key: "logExportFile",
    kind: "string",
    describe: "export the logs as NDJSON to this file (rotated by size)",
    doc: "export the logs as NDJSON to this file, rotated by size (unset: no file export)",
  },
  {
    env: "GATEHOUSE_LOG_EXPORT_FILE_MAX_BYTES",
    flag: "log-export-file-max-bytes",
    key: "logExportFileMaxBytes",
    kind: "int",
    default: "104857600",
    describe: "size past which the export file is rotated to <file>.1",
    doc: "size past which the export file is rotated to `<file>.1` (the older ones to `.2` ...)",
  },
  {
    env: "GATEHOUSE_LOG_EXPORT_FILE_KEEP",
    flag: "log-export-file-keep",
    key: "logExportFileKeep",
    kind: "int",
    default: "5",
    describe: "rotated export files kept (the oldest beyond it deleted)",
    doc: "rotated export files kept, `<file>.1` to `<file>.<keep>` (`0`: none)",
  },
  {
    env: "GATEHOUSE_LOG_EXPORT_HTTP_URL",
    flag: "log-export-http-url",
    key: "logExportHttpUrl",
    kind: "string",
    describe: "export the logs in batches by POST to this URL",
    doc: "export the logs in batches, one POST each, to this `http(s)://` URL (unset: no HTTP export)",
  },
  {
    env: "GATEHOUSE_LOG_EXPORT_HTTP_FORMAT",
    flag: "log-export-http-format",
    key: "logExportHttpFormat",
    kind: "string",
    default: "ndjson",
    describe: "body of the export POSTs: ndjson (application/x-ndjson) or json (an array)",
    doc: "body of the export POSTs: `ndjson` (`application/x-ndjson`, a record per line) or `json` (one array)",
  },
  {
    env: "GATEHOUSE_LOG_EXPORT_HTTP_HEADERS",
    flag: "log-export-http-headers",
    key: "logExportHttpHeaders",
    kind: "string",
    describe: "headers of the export POSTs, name=value,name=value (values URL-encoded)",
    doc: "headers of the export POSTs, `name=value,name=value` with values URL-encoded (say `Authorization=Splunk%20<token>`)",
  },
  {
    env: "GATEHOUSE_LOG_EXPORT_OTLP",
    flag: "log-export-otlp",
    key: "logExportOtlp",
    kind: "string",
    default: "off",
    describe:
      "export the logs as OpenTelemetry logs over OTLP/HTTP (on: to OTEL_EXPORTER_OTLP_[LOGS_]ENDPOINT)",
    doc: "export the logs as OpenTelemetry logs over OTLP/HTTP (`on`), to `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`",
  },
  {
    env: "GATEHOUSE_LOG_EXPORT_SPOOL_BYTES",
    flag: "log-export-spool-bytes",
    key: "logExportSpoolBytes",
    kind: "int",
    default: "268435456",
    describe: "bytes each export sink keeps on disk while it is away (oldest dropped first, counted)",
    doc: "bytes each export sink keeps on disk (in `<data-dir>/log-export/`) while it is away; past it the oldest are dropped, counted",
  },
  {
    env: "GATEHOUSE_LOG_EXPORT_FLUSH_MS",
    flag: "log-export-flush-ms",
    key: "logExportFlushMs",
    kind: "int",
    default: "1000",
    describe: "how often exported records waiting in memory are shipped",
    doc: "how often exported records waiting in memory are shipped (or spooled, when the sink is away)",
  },
  {
    env: "GATEHOUSE_PDP_IDLE_MINUTES",
    flag: "pdp-idle-minutes",
    key: "pdpIdleMinutes",
    kind: "int",
    default: "60",
    describe:
      "minutes the embedded PDP keeps an environment's in-memory copy after its last check (0 keeps every copy)",
    doc: "minutes the embedded PDP keeps an environment's in-memory copy after its last check; the next check loads it again (`0`: keep every copy)",
  },
  {
    env: "GATEHOUSE_PDP_LISTING_HISTORY",
    flag: "pdp-listing-history",
    key: "pdpListingHistory",
    kind: "int",
    default: "100000",
    describe:
      "writes each PDP copy keeps so that every page of a listing walk answers at its first page's revision",
    doc: "writes each PDP copy keeps (per environment, about 150 bytes each) so that every page of a listing walk answers at its first page's revision; a cursor older than that gets 410 (docs/data-filtering.md)",
  },
  {
    env: "GATEHOUSE_CONTROL_PLANE_URL",
    flag: "control-plane",
    key: "controlPlaneUrl",
    kind: "string",
    describe: "gatehouse pdp: the control plane a standalone PDP follows",
    doc: "`gatehouse pdp`: the control plane a standalone PDP follows",
  },
  {
    env: "GATEHOUSE_PDP_API_KEY",
    flag: "api-key",
    key: "pdpApiKey",
    kind: "string",
    describe: "gatehouse pdp: the environment API key the standalone PDP serves and syncs with",
    doc: "`gatehouse pdp`: the environment key the standalone PDP serves and syncs with",
  },
  {
    env: "GATEHOUSE_SESSION_IDLE_MINUTES",
    flag: "session-idle-minutes",
    key: "sessionIdleMinutes",
    kind: "int",
    default: "120",
    describe: "a member's session ends after this many minutes without a call",
    doc: "a member's session ends after this many minutes without a call",
  },
  {
    env: "GATEHOUSE_SESSION_MAX_HOURS",
    flag: "session-max-hours",
    key: "sessionMaxHours",
    kind: "int",
    default: "24",
    describe: "a member's session ends this many hours after the login, however busy",
    doc: "a member's session ends this many hours after the login, however busy",
  },
  {
    env: "GATEHOUSE_INVITE_EXPIRY_DAYS",
    flag: "invite-expiry-days",
    key: "inviteExpiryDays",
    kind: "int",
    default: "7",
    describe: "days an invite to an organization can be accepted",
    doc: "days an invite can be accepted",
  },
  {
    env: "GATEHOUSE_SMTP_URL",
    flag: "smtp-url",
    key: "smtpUrl",
    kind: "string",
    describe: "smtp:// or smtps:// server that mails invites (without it, invites are only shown as links)",
    doc: "`smtp://` or `smtps://` server that mails invites (unset: invites are links only)",
  },
  {
    env: "GATEHOUSE_SMTP_FROM",
    flag: "smtp-from",
    key: "smtpFrom",
    kind: "string",
    default: "Gatehouse <gatehouse@localhost>",
    describe: "sender of invite e-mails",
    doc: "sender of invite e-mails",
  },
  {
    env: "GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL",
    flag: "bootstrap-admin-email",
    key: "bootstrapAdminEmail",
    kind: "string",
    describe: "first start: the owner (organization admin) member's e-mail, instead of the setup link",
    doc: "while nobody is a member: the owner's e-mail (with the password below) instead of the setup link",
  },
  {
    env: "GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD",
    flag: "bootstrap-admin-password",
    key: "bootstrapAdminPassword",
    kind: "string",
    describe: "first start: the owner's password (12+ characters; prefer the variable to the flag)",
    doc: "the owner's password (12+ characters; prefer the variable: flags show in process lists)",
  },
  {
    env: "GATEHOUSE_LOGIN_FAILURES_PER_ACCOUNT",
    flag: "login-failures-per-account",
    key: "loginFailuresPerAccount",
    kind: "int",
    default: "10",
    describe: "failed logins of one e-mail in 15 minutes before logins to it get 429",
    doc: "failed logins of one e-mail per 15 minutes before its logins get 429",
  },
  {
    env: "GATEHOUSE_LOGIN_FAILURES_PER_ADDRESS",
    flag: "login-failures-per-address",
    key: "loginFailuresPerAddress",
    kind: "int",
    default: "50",
    describe: "failed logins from one client address in 15 minutes before its logins get 429",
    doc: "failed logins from one client address per 15 minutes before its logins get 429",
  },
  {
    env: "GATEHOUSE_REGION",
    flag: "region",
    key: "region",
    kind: "string",
    default: "us",
    describe: "the region this deployment serves (a short lower-case name such as us or eu)",
    doc: "the region this deployment serves ([regions](regions.md)); new key secrets name it (`gh_<region>_...`)",
  },
  {
    env: "GATEHOUSE_REGIONS",
    flag: "regions",
    key: "regions",
    kind: "string",
    describe: "every region's public base URL: us=https://api.example.com,eu=https://api.eu.example.com",
    doc: "every region's public base URL, `us=https://api.example.com,eu=https://api.eu.example.com`",
  },
  {
    env: "GATEHOUSE_REGION_SECRET",
    flag: "region-secret",
    key: "regionSecret",
    kind: "string",
    describe: "shared by the regions' deployments (32+ characters): one creates organizations in another",
    doc: "shared by the regions' deployments (32+ characters), so that one creates organizations in another",
  },
];

export class ConfigError extends Error {}

/**
 * The lowest rate limit a deployment or an organization may set: below it one typo locks every key out (the
 * dashboard alone needs several calls per page).
 */
export const MIN_RATE_LIMIT_PER_MINUTE = 60;
/** The highest an organization may set (the server's own setting is not bounded). */
export const MAX_RATE_LIMIT_PER_MINUTE = 1_000_000_000;

const LOG_LEVELS = new Set(["fatal", "error", "warn", "info", "debug", "trace", "silent"]);

/** Flags win over environment variables, which win over defaults. */
export function loadConfig(argv: string[] = [], env: NodeJS.ProcessEnv = process.env): Config {
  const { values } = parseArgs({
    args: argv,
    options: Object.fromEntries(SETTINGS.map((s) => [s.flag, { type: "string" as const }])),
    strict: true,
    allowPositionals: false,
  });
  const raw: Record<string, string | undefined> = {};
  for (const s of SETTINGS) {
    const fromFlag = values[s.flag];
    const fromEnv = env[s.env];
    raw[s.key] =
      typeof fromFlag === "string" ? fromFlag : fromEnv !== undefined && fromEnv !== "" ? fromEnv : s.default;
  }
  const out: Record<string, unknown> = {};
  for (const s of SETTINGS) {
    const value = raw[s.key];
    if (value === undefined) {
      out[s.key] = undefined;
      continue;
    }
    if (s.kind === "string") {
      out[s.key] = value;
      continue;
    }
    const n = Number(value);
    const max = s.kind === "port" ? 65535 : Number.MAX_SAFE_INTEGER;
    if (!/^\d+$/.test(value) || n > max) {
      throw new ConfigError(
        `${s.env} (--${s.flag}) must be ${s.kind === "port" ? "a port number" : "a non-negative integer"}, got "${value}"`,
      );
    }
    out[s.key] = n;
  }
  const config = out as unknown as Config;
  if (!LOG_LEVELS.has(config.logLevel)) {
    throw new ConfigError(`GATEHOUSE_LOG_LEVEL must be one of ${[...LOG_LEVELS].join(", ")}`);
  }
  if (config.bootstrapApiKey !== undefined && config.bootstrapApiKey.length < 32) {
    throw new ConfigError("GATEHOUSE_BOOTSTRAP_API_KEY must be at least 32 characters long");
  }
  if (config.secretKey !== undefined && config.secretKey.length < 32) {
    throw new ConfigError("GATEHOUSE_SECRET_KEY must be at least 32 characters long");
  }
  if (config.databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(config.databaseUrl)) {
    throw new ConfigError("DATABASE_URL must start with postgres:// or postgresql://");
  }
  if (config.taskLeaseSeconds < 1) throw new ConfigError("GATEHOUSE_TASK_LEASE_SECONDS must be at least 1");
  if (config.rateLimitPerMinute < MIN_RATE_LIMIT_PER_MINUTE) {
    throw new ConfigError(
      `GATEHOUSE_RATE_LIMIT_PER_MINUTE must be at least ${MIN_RATE_LIMIT_PER_MINUTE} (requests per minute per API key), got ${config.rateLimitPerMinute}`,
    );
  }
  if (config.decisionLog !== "on" && config.decisionLog !== "off") {
    throw new ConfigError(`GATEHOUSE_DECISION_LOG must be "on" or "off", got "${config.decisionLog}"`);
  }
  if (config.apiLog !== "on" && config.apiLog !== "off") {
    throw new ConfigError(`GATEHOUSE_API_LOG must be "on" or "off", got "${config.apiLog}"`);
  }
  if (config.webhookAllowPrivateUrls !== "true" && config.webhookAllowPrivateUrls !== "false") {
    throw new ConfigError(
      `GATEHOUSE_WEBHOOK_ALLOW_PRIVATE_URLS must be "true" or "false", got "${config.webhookAllowPrivateUrls}"`,
    );
  }
  if (config.webhookTimeoutMs < 1 || config.webhookRetryBaseMs < 1 || config.webhookRetrySeconds < 1) {
    throw new ConfigError(
      "GATEHOUSE_WEBHOOK_TIMEOUT_MS, _RETRY_BASE_MS and _RETRY_SECONDS must be at least 1",
    );
  }
  if (config.apiLogMaxBodyBytes < 1)
    throw new ConfigError("GATEHOUSE_API_LOG_MAX_BODY_BYTES must be at least 1");
  if (config.apiLogFlushMs < 1) throw new ConfigError("GATEHOUSE_API_LOG_FLUSH_MS must be at least 1");
  if (config.sessionIdleMinutes < 1)
    throw new ConfigError("GATEHOUSE_SESSION_IDLE_MINUTES must be at least 1");
  if (config.sessionMaxHours < 1) throw new ConfigError("GATEHOUSE_SESSION_MAX_HOURS must be at least 1");
  if (config.inviteExpiryDays < 1) throw new ConfigError("GATEHOUSE_INVITE_EXPIRY_DAYS must be at least 1");
  if (config.loginFailuresPerAccount < 1 || config.loginFailuresPerAddress < 1) {
    throw new ConfigError("GATEHOUSE_LOGIN_FAILURES_PER_ACCOUNT and _PER_ADDRESS must be at least 1");
  }
  if (config.smtpUrl !== undefined && !/^smtps?:\/\//.test(config.smtpUrl)) {
    throw new ConfigError("GATEHOUSE_SMTP_URL must start with smtp:// or smtps://");
  }
  if ((config.bootstrapAdminEmail === undefined) !== (config.bootstrapAdminPassword === undefined)) {
    throw new ConfigError(
      "GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL and GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD go together: set both or neither",
    );
  }
  checkBootstrapOwner(config.bootstrapAdminEmail, config.bootstrapAdminPassword);
  checkLogExport(config);
  config.dataDir = path.resolve(config.dataDir);
  config.publicUrl = (config.publicUrl ?? `http://${config.host}:${config.apiPort}`).replace(/\/+$/, "");
  if (config.regionSecret !== undefined && config.regionSecret.length < 32) {
    throw new ConfigError("GATEHOUSE_REGION_SECRET must be at least 32 characters long");
  }
  config.regionUrls = parseRegions(config.region, config.regions);
  return config;
}

/** The log export settings that name a choice. */
function checkLogExport(config: Config): void {
  const logs = config.logExportLogs.split(",").map((l) => l.trim());
  if (logs.some((l) => l !== "decision" && l !== "api")) {
    throw new ConfigError(
      `GATEHOUSE_LOG_EXPORT_LOGS must list decision, api or both, got "${config.logExportLogs}"`,
    );
  }
  if (config.logExportHttpFormat !== "ndjson" && config.logExportHttpFormat !== "json") {
    throw new ConfigError(
      `GATEHOUSE_LOG_EXPORT_HTTP_FORMAT must be "ndjson" or "json", got "${config.logExportHttpFormat}"`,
    );
  }
  if (config.logExportHttpUrl !== undefined && !/^https?:\/\//.test(config.logExportHttpUrl)) {
    throw new ConfigError("GATEHOUSE_LOG_EXPORT_HTTP_URL must start with http:// or https://");
  }
  if (config.logExportOtlp !== "on" && config.logExportOtlp !== "off") {
    throw new ConfigError(`GATEHOUSE_LOG_EXPORT_OTLP must be "on" or "off", got "${config.logExportOtlp}"`);
  }
  if (config.logExportFileMaxBytes < 1 || config.logExportFlushMs < 1) {
    throw new ConfigError(
      "GATEHOUSE_LOG_EXPORT_FILE_MAX_BYTES and GATEHOUSE_LOG_EXPORT_FLUSH_MS must be at least 1",
    );
  }
}

/** The first start's owner, by the members API's rules, so that a start that would fail creates nothing first. */
function checkBootstrapOwner(email: string | undefined, password: string | undefined): void {
  if (email === undefined || password === undefined) return;
  if (!isMemberEmail(email)) {
    throw new ConfigError(`GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL must be an e-mail address, got "${email}"`);
  }
  try {
    assertAcceptablePassword(password, email);
  } catch (e) {
    throw new ConfigError(`GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD: ${(e as Error).message}`);
  }
}

/** Variables of ours that are not settings: read by one command. */
const OTHER_VARIABLES = [
  "GATEHOUSE_MEMBER_PASSWORD",
  // the server and key of `gatehouse policy` (src/cli/policy-client.ts)
  "GATEHOUSE_URL",
  "GATEHOUSE_API_KEY",
];

/**
 * A line for each GATEHOUSE_* variable that nothing reads (a typo is otherwise ignored silently), with the
 * known name nearest to it.
 */
export function unknownVariableWarnings(env: NodeJS.ProcessEnv = process.env): string[] {
  const known = [...SETTINGS.map((s) => s.env), ...OTHER_VARIABLES];
  const lines: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith("GATEHOUSE_") || known.includes(name)) continue;
    const [nearest] = known
      .map((k) => ({ k, d: editDistance(name, k) }))
      .sort((a, b) => a.d - b.d || a.k.localeCompare(b.k));
    // A suggestion only when the name is plausibly a misspelling of it.
    const hint =
      nearest && nearest.d <= Math.max(2, Math.floor(name.length / 4)) ? `; did you mean ${nearest.k}?` : "";
    lines.push(`${name} is not a Gatehouse setting and is ignored${hint}`);
  }
  return lines;
}

/** Levenshtein distance: insertions, deletions and substitutions of one character. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/** A region's name goes into key secrets (`gh_<region>_...`): short, lower-case letters and digits. */
const REGION_RE = /^[a-z][a-z0-9]{0,15}$/;

function parseRegions(region: string, list: string | undefined): Record<string, string> {
  if (!REGION_RE.test(region)) {
    throw new ConfigError(`GATEHOUSE_REGION must be 1-16 lower-case letters and digits, got "${region}"`);
  }
  const urls: Record<string, string> = {};
  for (const entry of (list ?? "").split(",").filter((e) => e.trim() !== "")) {
    const match = /^\s*([^=\s]+)\s*=\s*(\S+)\s*$/.exec(entry);
    const [name, url] = [match?.[1] ?? "", match?.[2] ?? ""];
    if (!REGION_RE.test(name) || !/^https?:\/\/[^/]/.test(url)) {
      throw new ConfigError(
        `GATEHOUSE_REGIONS must be name=url pairs split by commas (us=https://api.example.com,eu=https://api.eu.example.com), got "${entry.trim()}"`,
      );
    }
    urls[name] = url.replace(/\/+$/, "");
  }
  return urls;
}

export function configHelp(): string {
  return SETTINGS.map(
    (s) =>
      `  --${s.flag.padEnd(24)} ${s.env.padEnd(34)} ${s.describe}${s.default ? ` (default ${s.default})` : ""}`,
  ).join("\n");
}
