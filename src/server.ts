import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import type { Config } from "./config.ts";
import { AppError } from "./lib/errors.ts";
import { hashPassword } from "./lib/passwords.ts";
import {
  countMembers,
  firstOrganizationId,
  insertMemberWithGrant,
  orgAdminGrant,
} from "./domain/member-records.ts";
import { createSetupToken } from "./domain/setup-token-records.ts";
import { buildApp } from "./app.ts";
import { dashboardBuilt } from "./plugins/dashboard.ts";
import { migrateToLatest, openStore, type Store } from "./db/store.ts";
import { sql } from "kysely";
import { isDatabaseUnavailable, isUniqueViolation } from "./db/errors.ts";
import { loggerOptions } from "./http/logging.ts";
import { StartError } from "./lib/start-error.ts";
import packageJson from "../package.json" with { type: "json" };
import { createSecretBox, type SecretBox } from "./lib/secrets.ts";
import { createOrganizationRecords } from "./domain/organization-records.ts";
import { listenForChanges } from "./changes/pg-listener.ts";
import { createEmbeddedPdp, type EmbeddedPdp } from "./pdp/embedded.ts";
import { databasePdpStorage } from "./domain/pdp-storage.ts";
import { disabledDecisionLogger } from "./pdp/runtime/decision-log.ts";
import { buildOpaApp, buildPdpApp } from "./pdp/http/server.ts";
import { embeddedDecisions } from "./pdp/http/embedded-decisions.ts";
import { openLogExport, type LogExport, type LogExportOptions } from "./domain/log-export/log-export.ts";
import { parseHeaders } from "./domain/log-export/sinks.ts";

export function openConfiguredStore(config: Config): Store {
  return openStore({
    databaseUrl: config.databaseUrl,
    sqliteFile: path.join(config.dataDir, "gatehouse.db"),
  });
}

/** GATEHOUSE_SECRET_KEY, or a key generated once into the data folder (fine for one instance; set the variable for several). */
export function loadSecretBox(config: Config): SecretBox {
  if (config.secretKey) return createSecretBox(config.secretKey, config.region);
  const file = path.join(config.dataDir, "secret.key");
  fs.mkdirSync(config.dataDir, { recursive: true });
  if (!fs.existsSync(file)) {
    fs.writeFileSync(file, crypto.getRandomValues(Buffer.alloc(32)).toString("base64url"), {
      mode: 0o600,
      flag: "wx",
    });
  }
  return createSecretBox(fs.readFileSync(file, "utf8").trim(), config.region);
}

/**
 * The first start: on an empty store, the first organization and its admin key (printed once, never logged);
 * while nobody is a member, the owner: from GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL and _PASSWORD, else a one-time setup
 * link (24 h). Called once every port is bound, so nothing is shown for a server that could not start.
 */
export async function firstStartBootstrap(
  store: Store,
  box: SecretBox,
  config: Config,
  print: (line: string) => void,
): Promise<void> {
  await bootstrapOrganization(store, box, config, print);
  await bootstrapOwner(store, config, print);
}

async function bootstrapOwner(store: Store, config: Config, print: (line: string) => void): Promise<void> {
  if ((await countMembers(store.db)) > 0) return;
  const organizationId = await firstOrganizationId(store.db);
  if (!organizationId) return;
  const { bootstrapAdminEmail: email, bootstrapAdminPassword: password } = config;
  // Both were checked with the configuration (loadConfig), before anything was created.
  if (email !== undefined && password !== undefined) {
    const passwordHash = await hashPassword(password);
    try {
      await store.db
        .transaction()
        .execute((trx) => insertMemberWithGrant(trx, { email, passwordHash }, orgAdminGrant(organizationId)));
      print(`Created the owner ${email.toLowerCase()} (organization admin); log in with its password.`);
    } catch (e) {
      // Another instance created it first.
      if (!(e instanceof AppError && e.code === "CONFLICT")) throw e;
    }
    return;
  }
  const token = await createSetupToken(store.db);
  print(
    "Nobody can log in yet. Create the owner account (organization admin) within 24 hours at this one-time link:",
  );
  print(`  ${config.publicUrl}/setup/${token}`);
}

async function bootstrapOrganization(
  store: Store,
  box: SecretBox,
  config: Config,
  print: (line: string) => void,
): Promise<void> {
  const existing = await store.db.selectFrom("organizations").select("id").limit(1).executeTakeFirst();
  if (existing) return;
  try {
    const created = await createOrganizationRecords(
      store.db,
      box,
      { key: "default", name: "Default Organization" },
      config.bootstrapApiKey,
    );
    if (config.bootstrapApiKey) {
      print("Created the first organization; its admin API key is GATEHOUSE_BOOTSTRAP_API_KEY.");
    } else {
      print("Created the first organization. Its admin API key (shown once, keep it safe):");
      print(`  ${created.adminKeySecret}`);
    }
  } catch (e) {
    // Another instance bootstrapped the same empty database first.
    if (!isUniqueViolation(e) && !(e instanceof Error && e.message.includes("already exists"))) throw e;
  }
}

/**
 * The embedded PDP of a built control plane: it forwards facts calls into `app`, logs through it, follows its
 * writes, and drops cached keys and environments when the app announces that they changed.
 */
function createPdpOf(app: FastifyInstance, store: Store, config: Config, logExport: LogExport): EmbeddedPdp {
  const pdp = createEmbeddedPdp({
    storage: databasePdpStorage(
      store,
      (keyId) => app.keyUse.used(keyId),
      logExport.enabled ? logExport.decisions : undefined,
    ),
    notifier: app.notifier,
    publicUrl: config.publicUrl,
    regions: config,
    controlPlane: () => app,
    idleMs: config.pdpIdleMinutes * 60_000,
    listingHistory: config.pdpListingHistory,
    onError: (err) => {
      // A database outage is logged once, however many syncs and log shipments fail meanwhile.
      if (!store.outage.report(err, app.log)) app.log.error({ err }, "embedded PDP error");
    },
    ...(config.decisionLog === "off" && { decisions: disabledDecisionLogger }),
  });
  app.events.on("keysChanged", () => pdp.invalidateKeys());
  app.events.on("environmentDeleted", (environmentId) => pdp.dropEnvironment(environmentId));
  app.pdpSlot.current = embeddedDecisions(pdp);
  return pdp;
}

export interface RunningServer {
  app: FastifyInstance;
  close(): Promise<void>;
}

/** The dashboard's build (npm run build:web), next to src/ as next to a bundle in dist/. */
const DASHBOARD_DIR = fileURLToPath(new URL("../web/dist", import.meta.url));

export async function startServer(
  config: Config,
  print: (line: string) => void = console.log,
): Promise<RunningServer> {
  const store = await openReachableStore(config);
  try {
    await migrateToLatest(store);
  } catch (e) {
    await store.close().catch(() => {});
    throw e;
  }
  const box = loadSecretBox(config);
  // The export's lines go to the app's log, once there is one.
  const built: { app?: FastifyInstance } = {};
  const logExport = await openConfiguredLogExport(config, {
    warn: (obj, msg) => built.app?.log.warn(obj, msg),
  }).catch(async (e: unknown) => {
    await store.close().catch(() => {});
    throw e;
  });
  // The control plane first, then the embedded PDP over it.
  const app = await buildApp({
    config,
    store,
    box,
    logger: await loggerOptions(config.logLevel),
    dashboardDir: DASHBOARD_DIR,
    logExport,
  });
  built.app = app;
  app.starting = true;
  const pdp = config.pdpPort === 0 ? undefined : createPdpOf(app, store, config, logExport);
  // On PostgreSQL, writes committed by other instances wake this one's PDPs at once (polling stays the fallback).
  const listener =
    store.pgClientConfig &&
    listenForChanges({
      clientConfig: store.pgClientConfig,
      notifier: app.notifier,
      onTaskCreated: () => app.taskRunner.kick(),
      // An outage is logged once, by the store; anything else in one line, without a stack.
      onError: (err) => {
        if (store.outage.report(err, app.log)) return;
        app.log.warn(
          { reason: (err as Error).message },
          "the PostgreSQL LISTEN connection failed; reconnecting",
        );
      },
    });
  if (listener) app.taskRunner.wakeBy(listener);
  const pdpApps: FastifyInstance[] = [];
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      for (const pdpApp of pdpApps) await pdpApp.close();
      await listener?.close();
      await pdp?.close();
      await app.close();
      // After both logs have written their last records.
      await logExport.close();
      await store.close();
    })();
    return closing;
  };
  // Every port is bound before anything is created or printed: a taken port stops the start here.
  try {
    await listenOn(app, config.host, config.apiPort, "--api-port");
    if (pdp) {
      const logger = await loggerOptions(config.logLevel);
      const pdpApp = await buildPdpApp({ ...pdp, logger });
      pdpApps.push(pdpApp);
      await listenOn(pdpApp, config.host, config.pdpPort, "--pdp-port");
      if (config.opaPort !== 0) {
        const opaApp = await buildOpaApp({ ...pdp, logger });
        pdpApps.push(opaApp);
        await listenOn(opaApp, config.host, config.opaPort, "--opa-port");
      }
      app.pdpSlot.ports = { pdp: config.pdpPort, opa: config.opaPort };
    }
  } catch (e) {
    await close().catch(() => {});
    throw e;
  }
  await firstStartBootstrap(store, box, config, print);
  app.starting = false;
  // Background task workers run in every instance; app.close() stops them (the running task is given back).
  app.taskRunner.start();
  for (const line of runningBanner(config, app, pdpApps)) print(line);
  return { app, close };
}

/** The log export sinks the settings name, their spools in the data folder. */
export function openConfiguredLogExport(config: Config, log: LogExportOptions["log"]): Promise<LogExport> {
  return openLogExport({
    spoolDir: path.join(config.dataDir, "log-export"),
    spoolBytes: config.logExportSpoolBytes,
    logs: config.logExportLogs.split(",").map((l) => l.trim() as "decision" | "api"),
    file: config.logExportFile
      ? {
          path: path.resolve(config.logExportFile),
          maxBytes: config.logExportFileMaxBytes,
          keep: config.logExportFileKeep,
        }
      : undefined,
    http: config.logExportHttpUrl
      ? {
          url: config.logExportHttpUrl,
          format: config.logExportHttpFormat as "ndjson" | "json",
          headers: parseHeaders(config.logExportHttpHeaders ?? ""),
        }
      : undefined,
    otlp: config.logExportOtlp === "on",
    flushIntervalMs: config.logExportFlushMs,
    log,
  });
}

async function listenOn(app: FastifyInstance, host: string, port: number, flag: string): Promise<void> {
  try {
    await app.listen({ host, port });
  } catch (e) {
    if ((e as { code?: unknown }).code !== "EADDRINUSE") throw e;
    throw new StartError(
      `cannot listen on ${host}:${port}: the port is in use (EADDRINUSE); choose another with ${flag}`,
    );
  }
}

/** What is running where, printed once the server is ready. */
function runningBanner(config: Config, app: FastifyInstance, pdpApps: FastifyInstance[]): string[] {
  const urlOf = (server: FastifyInstance | undefined) => {
    const address = server?.server.address();
    if (!address || typeof address === "string") return undefined;
    const host = ["0.0.0.0", "::"].includes(config.host) ? "localhost" : config.host;
    return `http://${host.includes(":") ? `[${host}]` : host}:${address.port}`;
  };
  const api = urlOf(app) as string;
  const [pdpUrl, opaUrl] = pdpApps.map(urlOf);
  return [
    `Gatehouse ${packageJson.version} is running`,
    `  API        ${api}/v2 (every request needs Authorization: Bearer <API key>)`,
    `  API docs   ${api}/docs`,
    `  dashboard  ${dashboardBuilt(DASHBOARD_DIR) ? `${api}/` : "not built (npm run build:web)"}`,
    `  PDP        ${pdpUrl ? `${pdpUrl}${opaUrl ? `, OPA-compatible ${opaUrl}` : ""}` : "off (--pdp-port 0)"}`,
    `  metrics    ${api}/metrics`,
    `  database   ${describeDatabase(config)}`,
    `  data       ${config.dataDir}`,
  ];
}

/** The database in use, without its password. */
export function describeDatabase(config: Config): string {
  if (!config.databaseUrl) return `SQLite ${path.join(config.dataDir, "gatehouse.db")}`;
  const url = new URL(config.databaseUrl);
  url.password = "";
  return `PostgreSQL ${url.toString()}`;
}

/** host:port of a PostgreSQL URL, as errors name it. */
const databaseAddress = (databaseUrl: string) => {
  const url = new URL(databaseUrl);
  return `${url.hostname || "localhost"}:${url.port || "5432"}`;
};

/** Seconds the first query at start may take before the start fails. */
const REACH_TIMEOUT_MS = 5_000;

/**
 * The configured store, once it answers: an unreachable PostgreSQL server ends the start within seconds with one
 * line saying where and why (`cannot reach the database at host:port (ECONNREFUSED)`).
 */
export async function openReachableStore(config: Config): Promise<Store> {
  const store = openConfiguredStore(config);
  if (!config.databaseUrl) return store;
  const where = databaseAddress(config.databaseUrl);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new StartError(
            `cannot reach the database at ${where} (no answer within ${REACH_TIMEOUT_MS / 1000} s)`,
          ),
        ),
      REACH_TIMEOUT_MS,
    );
  });
  try {
    await Promise.race([sql`select 1`.execute(store.db), deadline]);
    return store;
  } catch (e) {
    void store.close().catch(() => {});
    if (e instanceof StartError) throw e;
    const reason = reasonOf(e);
    throw new StartError(
      isDatabaseUnavailable(e)
        ? `cannot reach the database at ${where} (${reason})`
        : `the database at ${where} refused the connection: ${reason}`,
    );
  } finally {
    clearTimeout(timer);
  }
}

/** An error's code (ECONNREFUSED, ENOTFOUND), or its message; for a name with several addresses, the first's. */
function reasonOf(e: unknown): string {
  const error = e as { code?: unknown; message?: unknown; errors?: unknown[] };
  if (typeof error.code === "string" && !/^\d/.test(error.code)) return error.code;
  if (Array.isArray(error.errors) && error.errors.length > 0) return reasonOf(error.errors[0]);
  return typeof error.message === "string" && error.message ? error.message : String(e);
}
