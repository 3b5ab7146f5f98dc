import type { FastifyInstance, InjectOptions } from "fastify";
import { describe, before, after } from "node:test";
import { buildApp } from "../../src/app.ts";
import { loadConfig, type Config } from "../../src/config.ts";
import type { Dialect, Store } from "../../src/db/store.ts";
import { createSecretBox, type SecretBox } from "../../src/lib/secrets.ts";
import { createOrganizationRecords } from "../../src/domain/organization-records.ts";
import { DIALECTS, freshStore, type TestStore } from "./stores.ts";

export const PUBLIC_URL = "http://gatehouse.test";

export interface SeededOrg {
  id: string;
  key: string;
  adminKey: string;
  adminKeyId: string;
  projectId: string;
  envs: { production: string; development: string };
}

export interface TestEnv {
  dialect: Dialect;
  app: FastifyInstance;
  store: TestStore;
  box: SecretBox;
  /** Two organizations, each with project `default` and environments `production` and `development`. */
  acme: SeededOrg;
  globex: SeededOrg;
  call(key: string | null, method: InjectOptions["method"], url: string, body?: unknown): Promise<Reply>;
}

export interface Reply {
  status: number;
  headers: Record<string, unknown>;
  body: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

async function seedOrg(store: TestStore, box: SecretBox, key: string): Promise<SeededOrg> {
  const created = await createOrganizationRecords(store.db, box, { key, name: `${key} inc` });
  const project = await store.db
    .selectFrom("projects")
    .select("id")
    .where("organization_id", "=", created.organization.id)
    .executeTakeFirstOrThrow();
  const envs = await store.db
    .selectFrom("environments")
    .select(["id", "key"])
    .where("project_id", "=", project.id)
    .execute();
  const envId = (k: string) => envs.find((e) => e.key === k)?.id ?? "";
  return {
    id: created.organization.id,
    key,
    adminKey: created.adminKeySecret,
    adminKeyId: created.adminKeyId,
    projectId: project.id,
    envs: { production: envId("production"), development: envId("development") },
  };
}

/** What a suite may set on its app; everything else is as in production. */
export interface TestAppOptions extends Partial<
  Pick<
    Config,
    | "rateLimitPerMinute"
    | "redisUrl"
    | "apiLog"
    | "apiLogFlushMs"
    | "apiLogMaxBodyBytes"
    | "loginFailuresPerAccount"
    | "loginFailuresPerAddress"
    | "smtpUrl"
    | "inviteExpiryDays"
    | "publicUrl"
    | "webhookAllowPrivateUrls"
    | "webhookTimeoutMs"
    | "webhookRetryBaseMs"
    | "webhookRetrySeconds"
  >
> {
  /** rate-limit clock (ms since the epoch) */
  clock?: () => number;
}

/** A ready app over `store`; a second one over the same store is a second instance of the service. */
export async function buildTestApp(
  store: Store,
  box: SecretBox,
  options: TestAppOptions = {},
): Promise<FastifyInstance> {
  const { clock, ...settings } = options;
  const app = await buildApp({
    // The production defaults (not this process's environment), with a test's public URL and body limit, and a
    // rate limit far above what any suite sends.
    config: {
      ...loadConfig([], {}),
      publicUrl: PUBLIC_URL,
      bodyLimitBytes: 1024 * 1024,
      rateLimitPerMinute: 1_000_000,
      ...settings,
    },
    store,
    box,
    ...(clock && { clock }),
  });
  await app.ready();
  return app;
}

export async function createTestEnv(dialect: Dialect, options: TestAppOptions = {}): Promise<TestEnv> {
  const store = await freshStore(dialect);
  const box = createSecretBox("test-secret-key-that-is-long-enough-000");
  const app = await buildTestApp(store, box, options);
  const acme = await seedOrg(store, box, "acme");
  const globex = await seedOrg(store, box, "globex");
  return {
    dialect,
    app,
    store,
    box,
    acme,
    globex,
    async call(key, method, url, body) {
      const res = await app.inject({
        method,
        url,
        headers: key === null ? {} : { authorization: `Bearer ${key}` },
        ...(body !== undefined && { payload: body as InjectOptions["payload"] }),
      });
      let json: unknown = undefined;
      try {
        json = res.body === "" ? undefined : JSON.parse(res.body);
      } catch {
        json = undefined;
      }
      return { status: res.statusCode, headers: res.headers, body: res.body, json };
    },
  };
}

/**
 * Runs a suite once per database. Each run gets a fresh database (file or schema) shared by the suite's tests.
 */
export function describeEachDialect(
  name: string,
  fn: (env: () => TestEnv) => void,
  options: TestAppOptions = {},
): void {
  for (const { dialect, skip } of DIALECTS) {
    describe(`${name} [${dialect}]`, { skip }, () => {
      let env: TestEnv | undefined;
      before(async () => {
        env = await createTestEnv(dialect, options);
      });
      after(async () => {
        await env?.app.close();
        await env?.store.close();
      });
      fn(() => {
        if (!env) throw new Error("test environment not ready");
        return env;
      });
    });
  }
}
