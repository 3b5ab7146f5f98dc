import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { ConfigError, type Config } from "./config.ts";
import { AppError } from "./lib/errors.ts";
import { assertAcceptablePassword, hashPassword } from "./lib/passwords.ts";
import {
  countMembers,
  firstOrganizationId,
  insertMemberWithGrant,
  orgAdminGrant,
} from "./domain/member-records.ts";
import { createSetupToken } from "./domain/setup-token-records.ts";
import { buildApp } from "./app.ts";
import { migrateToLatest, openStore, type Store } from "./db/store.ts";
import { isUniqueViolation } from "./db/errors.ts";
import { createSecretBox, type SecretBox } from "./lib/secrets.ts";
import { createOrganizationRecords } from "./domain/organization-records.ts";
import { listenForChanges } from "./changes/pg-listener.ts";
import { createEmbeddedPdp, type EmbeddedPdp } from "./pdp/embedded.ts";
import { databasePdpStorage } from "./domain/pdp-storage.ts";
import { disabledDecisionLogger } from "./pdp/runtime/decision-log.ts";
import { buildOpaApp, buildPdpApp } from "./pdp/http/server.ts";

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
 * On an empty store, the first organization and its admin key (printed once, never logged); while nobody is a
 * member, the owner: from GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL and _PASSWORD, else a one-time setup link (24 h).
 */
export async function bootstrap(
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
  if (email !== undefined && password !== undefined) {
    try {
      assertAcceptablePassword(password, email);
    } catch (e) {
      throw new ConfigError(`GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD: ${(e as Error).message}`);
    }
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
function createPdpOf(app: FastifyInstance, store: Store, config: Config): EmbeddedPdp {
  const pdp = createEmbeddedPdp({
    storage: databasePdpStorage(store),
    notifier: app.notifier,
    publicUrl: config.publicUrl,
    regions: config,
    controlPlane: () => app,
    idleMs: config.pdpIdleMinutes * 60_000,
    onError: (err) => {
      // A database outage is logged once, however many syncs and log shipments fail meanwhile.
      if (!store.outage.report(err, app.log)) app.log.error({ err }, "embedded PDP error");
    },
    ...(config.decisionLog === "off" && { decisions: disabledDecisionLogger }),
  });
  app.events.on("keysChanged", () => pdp.invalidateKeys());
  app.events.on("environmentDeleted", (environmentId) => pdp.dropEnvironment(environmentId));
  return pdp;
}

/** The control plane's pino options: credentials in headers never reach a log line. */
export const serverLogger = (level: string) => ({
  level,
  redact: {
    paths: ["req.headers.authorization", "req.headers.cookie", 'req.headers["x-csrf-token"]'],
    censor: "[redacted]",
  },
});

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
  const store = openConfiguredStore(config);
  await migrateToLatest(store);
  const box = loadSecretBox(config);
  await bootstrap(store, box, config, print);
  const logger = serverLogger(config.logLevel);
  // The control plane first, then the embedded PDP over it.
  const app = await buildApp({ config, store, box, logger, dashboardDir: DASHBOARD_DIR });
  const pdp = config.pdpPort === 0 ? undefined : createPdpOf(app, store, config);
  // On PostgreSQL, writes committed by other instances wake this one's PDPs at once (polling stays the fallback).
  const listener =
    store.pgClientConfig &&
    listenForChanges({
      clientConfig: store.pgClientConfig,
      notifier: app.notifier,
      // An outage is logged once, by the store; anything else in one line, without a stack.
      onError: (err) => {
        if (store.outage.report(err, app.log)) return;
        app.log.warn(
          { reason: (err as Error).message },
          "the PostgreSQL LISTEN connection failed; reconnecting",
        );
      },
    });
  await app.listen({ host: config.host, port: config.apiPort });
  // Background task workers run in every instance; app.close() stops them (the running task is given back).
  app.taskRunner.start();
  const pdpApps: FastifyInstance[] = [];
  if (pdp) {
    const pdpApp = await buildPdpApp({ ...pdp, logger: { level: config.logLevel } });
    await pdpApp.listen({ host: config.host, port: config.pdpPort });
    pdpApps.push(pdpApp);
    if (config.opaPort !== 0) {
      const opaApp = await buildOpaApp({ ...pdp, logger: { level: config.logLevel } });
      await opaApp.listen({ host: config.host, port: config.opaPort });
      pdpApps.push(opaApp);
    }
  }
  let closing: Promise<void> | undefined;
  return {
    app,
    close() {
      closing ??= (async () => {
        for (const pdpApp of pdpApps) await pdpApp.close();
        await listener?.close();
        await pdp?.close();
        await app.close();
        await store.close();
      })();
      return closing;
    },
  };
}
