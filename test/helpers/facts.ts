import assert from "node:assert/strict";
import type { StoredChange } from "../../src/changes/feed.ts";
import { readChangesAfter } from "./changes.ts";
import type { Database } from "../../src/db/types.ts";
import type { SeededOrg, TestEnv, Reply } from "./app.ts";
import { validatePermitResponse } from "./permit-contract.ts";
import { seedSchema, STANDARD_SCHEMA, type SeededSchema } from "./seed-schema.ts";

/** Shared pieces of the facts API tests. */
export type EnvName = "production" | "development";

/** `/v2/facts/{proj}/{env}` with uuids, as the SDK sends them. */
export const factsUrl = (org: SeededOrg, env: EnvName = "production"): string =>
  `/v2/facts/${org.projectId}/${org.envs[env]}`;

/** The same path as a template of Permit's OpenAPI document. */
export const permitPath = (suffix: string): string => `/v2/facts/{proj_id}/{env_id}${suffix}`;

/** Asserts the body matches the response schema Permit documents for the operation. */
export function assertPermit(method: string, suffix: string, status: number, body: unknown): void {
  assert.deepEqual(
    validatePermitResponse(method, permitPath(suffix), status, body),
    [],
    JSON.stringify(body),
  );
}

export async function revisionOf(env: TestEnv, environmentId: string): Promise<number> {
  const row = await env.store.db
    .selectFrom("environments")
    .select("revision")
    .where("id", "=", environmentId)
    .executeTakeFirstOrThrow();
  return Number(row.revision);
}

type EnvironmentTable = {
  [T in keyof Database]: Database[T] extends { environment_id: unknown } ? T : never;
}[keyof Database];

const FACT_TABLES: readonly EnvironmentTable[] = [
  "users",
  "tenants",
  "role_assignments",
  "resource_instances",
  "relationship_tuples",
  "condition_set_rules",
];

/** The environment's revision and its row count in each table, to prove a failed write left no trace. */
export async function countsOf(
  env: TestEnv,
  environmentId: string,
  tables: readonly EnvironmentTable[],
): Promise<Record<string, number>> {
  const counts: Record<string, number> = { revision: await revisionOf(env, environmentId) };
  for (const table of tables) {
    const row = await env.store.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("environment_id", "=", environmentId)
      .executeTakeFirstOrThrow();
    counts[table] = Number(row.n);
  }
  return counts;
}

export const changesAfter = (
  env: TestEnv,
  environmentId: string,
  revision: number,
): Promise<StoredChange[]> => readChangesAfter(env.store.db, environmentId, revision, 10_000);

/** The revision header of a write, as a number, and that it is the environment's new revision. */
export async function assertRevision(env: TestEnv, res: Reply, environmentId: string): Promise<number> {
  const header = res.headers["x-gatehouse-revision"];
  assert.equal(typeof header, "string", `no revision header on ${res.status} ${res.body}`);
  const revision = Number(header);
  assert.equal(revision, await revisionOf(env, environmentId));
  return revision;
}

/**
 * Runs a write and checks the feed: exactly one new revision, carried by the response header, holding the
 * given records (kind, op and data, in any order).
 */
export async function expectFeed(
  env: TestEnv,
  environmentId: string,
  write: () => Promise<Reply>,
  expected: { kind: string; op: string; data: unknown }[],
): Promise<Reply> {
  const before = await revisionOf(env, environmentId);
  const res = await write();
  assert.ok(res.status < 300, `${res.status} ${res.body}`);
  const revision = await assertRevision(env, res, environmentId);
  assert.equal(revision, before + 1);
  const records = (await changesAfter(env, environmentId, before)).map(({ kind, op, data }) => ({
    kind,
    op,
    data,
  }));
  assert.ok(
    records.every((r) => r.kind && r.op),
    "records have a kind and an op",
  );
  const sortKey = (r: unknown) => JSON.stringify(r);
  assert.deepEqual(
    [...records].sort((a, b) => sortKey(a).localeCompare(sortKey(b))),
    [...expected.sort((a, b) => sortKey(a).localeCompare(sortKey(b)))],
  );
  return res;
}

/** Asserts a failed write changed nothing: same revision, same row counts. */
export async function expectNothingWritten(
  env: TestEnv,
  environmentId: string,
  write: () => Promise<Reply>,
  status: number,
): Promise<Reply> {
  const snapshot = () => countsOf(env, environmentId, FACT_TABLES);
  const before = await snapshot();
  const res = await write();
  assert.equal(res.status, status, String(res.body));
  assert.equal(res.headers["x-gatehouse-revision"], undefined);
  assert.ok(res.json?.error_code || res.json?.detail, `an error body: ${res.body}`);
  assert.deepEqual(await snapshot(), before);
  return res;
}

/** Each body POSTed to `url` (in acme production) gets its status and a message matching its pattern, and writes nothing. */
export async function expectEachRejected(
  env: TestEnv,
  url: string,
  cases: [Record<string, unknown>, number, RegExp][],
): Promise<void> {
  for (const [body, status, message] of cases) {
    const res = await expectNothingWritten(
      env,
      env.acme.envs.production,
      () => env.call(env.acme.adminKey, "POST", url, body),
      status,
    );
    assert.match(res.json.message, message, JSON.stringify(body));
  }
}

/** Seeds the standard schema into acme production, acme development and globex production. */
export async function seedStandard(env: TestEnv): Promise<Record<string, SeededSchema>> {
  return {
    acmeProd: await seedSchema(env.store.db, env.acme.envs.production, STANDARD_SCHEMA),
    acmeDev: await seedSchema(env.store.db, env.acme.envs.development, STANDARD_SCHEMA),
    globexProd: await seedSchema(env.store.db, env.globex.envs.production, STANDARD_SCHEMA),
  };
}

/** Creates tenants `keys` in acme production (factsUrl `F`), each named by its key. */
export async function postTenants(env: TestEnv, F: string, keys: string[]): Promise<void> {
  for (const key of keys) {
    assert.equal((await env.call(env.acme.adminKey, "POST", `${F}/tenants`, { key, name: key })).status, 201);
  }
}

export const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?\+00:00$/;
