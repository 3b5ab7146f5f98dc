import { Readable } from "node:stream";
import Sqlite from "better-sqlite3";
import { Kysely, SqliteDialect } from "kysely";
import type { Database } from "../db/types.ts";
import type { Store } from "../db/store.ts";
import { fromJsonObject } from "../lib/json.ts";
import { environmentRevision, readPolicy } from "./environment-snapshot.ts";
import { afterKey, type ListKey } from "./facts/list-pages.repo.ts";
import { assignmentsJoined } from "./facts/role-assignments.repo.ts";
import { tuplesJoined } from "./facts/tuples.repo.ts";
import type { EnvironmentData } from "../pdp/engine/types.ts";
import type { SnapshotHeader } from "../pdp/storage.ts";

/** Rows per line of the stream (and per query): bounds what either side holds of the facts at once. */
export const SNAPSHOT_PAGE = 5000;

type Trx = Kysely<Database>;

/**
 * A read transaction of its own, held until `release`: on PostgreSQL repeatable read on one pooled connection; on
 * a SQLite file a read-only connection of its own (WAL: its first read fixes what it sees, and writers go on); on
 * an in-memory SQLite database, the one connection (writes wait until the stream ends: tests only).
 */
async function openReadTransaction(store: Store): Promise<{ trx: Trx; release: () => Promise<void> }> {
  let own: Kysely<Database> | undefined;
  let db = store.db;
  if (store.dialect === "sqlite" && store.sqliteFile !== undefined) {
    own = new Kysely<Database>({
      dialect: new SqliteDialect({ database: new Sqlite(store.sqliteFile, { readonly: true }) }),
    });
    db = own;
  }
  const builder =
    store.dialect === "postgres" ? db.transaction().setIsolationLevel("repeatable read") : db.transaction();
  return new Promise((resolve, reject) => {
    let finish: () => void = () => {};
    const done = builder
      .execute(
        (trx) =>
          new Promise<void>((end) => {
            finish = end;
            resolve({ trx, release });
          }),
      )
      .catch(reject);
    async function release() {
      finish();
      await done;
      await own?.destroy();
    }
  });
}

/**
 * Each kind of fact, read a page at a time in (created_at, id) order, each page a range of the table's
 * (environment_id, created_at, id) index (keyset), and mapped to the engine's input.
 */
const FACT_PAGES = {
  users: (trx: Trx, env: string, after: ListKey | undefined, limit: number) =>
    trx
      .selectFrom("users as u")
      .select(["u.id", "u.created_at", "u.key", "u.email", "u.first_name", "u.last_name", "u.attributes"])
      .where("u.environment_id", "=", env)
      .$if(after !== undefined, (q) => q.where(afterKey("u", after!)))
      .orderBy("u.created_at")
      .orderBy("u.id")
      .limit(limit)
      .execute()
      .then((rows) =>
        rows.map((u) => ({
          key: { created_at: u.created_at, id: u.id },
          fact: {
            key: u.key,
            email: u.email,
            first_name: u.first_name,
            last_name: u.last_name,
            attributes: fromJsonObject(u.attributes),
          },
        })),
      ),
  tenants: (trx: Trx, env: string, after: ListKey | undefined, limit: number) =>
    trx
      .selectFrom("tenants as t")
      .select(["t.id", "t.created_at", "t.key", "t.attributes"])
      .where("t.environment_id", "=", env)
      .$if(after !== undefined, (q) => q.where(afterKey("t", after!)))
      .orderBy("t.created_at")
      .orderBy("t.id")
      .limit(limit)
      .execute()
      .then((rows) =>
        rows.map((t) => ({
          key: { created_at: t.created_at, id: t.id },
          fact: { key: t.key, attributes: fromJsonObject(t.attributes) },
        })),
      ),
  resource_instances: (trx: Trx, env: string, after: ListKey | undefined, limit: number) =>
    trx
      .selectFrom("resource_instances as i")
      .innerJoin("resources as r", "r.id", "i.resource_id")
      .innerJoin("tenants as t", "t.id", "i.tenant_id")
      .select(["i.id", "i.created_at", "i.key", "i.attributes", "r.key as resource", "t.key as tenant"])
      .where("i.environment_id", "=", env)
      .$if(after !== undefined, (q) => q.where(afterKey("i", after!)))
      .orderBy("i.created_at")
      .orderBy("i.id")
      .limit(limit)
      .execute()
      .then((rows) =>
        rows.map((i) => ({
          key: { created_at: i.created_at, id: i.id },
          fact: {
            resource: i.resource,
            key: i.key,
            tenant: i.tenant,
            attributes: fromJsonObject(i.attributes),
          },
        })),
      ),
  role_assignments: (trx: Trx, env: string, after: ListKey | undefined, limit: number) =>
    assignmentsJoined(trx)
      .innerJoin("users as u", "u.id", "ra.user_id")
      .select([
        "ra.id",
        "ra.created_at",
        "u.key as user",
        "r.key as role",
        "t.key as tenant",
        "ri.key as instance",
        "res.key as instance_resource",
        "ra.expires_at",
      ])
      .where("ra.environment_id", "=", env)
      .$if(after !== undefined, (q) => q.where(afterKey("ra", after!)))
      .orderBy("ra.created_at")
      .orderBy("ra.id")
      .limit(limit)
      .execute()
      .then((rows) =>
        rows.map((a) => ({
          key: { created_at: a.created_at, id: a.id },
          fact: {
            user: a.user,
            role: a.role,
            tenant: a.tenant,
            resource_instance: a.instance === null ? null : `${a.instance_resource}:${a.instance}`,
            ...(a.expires_at !== null && { expires_at: a.expires_at }),
          },
        })),
      ),
  relationship_tuples: (trx: Trx, env: string, after: ListKey | undefined, limit: number) =>
    tuplesJoined(trx)
      .innerJoin("tenants as t", "t.id", "rt.tenant_id")
      .select([
        "rt.id",
        "rt.created_at",
        "s.key as subject",
        "sr.key as subject_resource",
        "o.key as object",
        "orr.key as object_resource",
        "rel.key as relation",
        "t.key as tenant",
      ])
      .where("rt.environment_id", "=", env)
      .$if(after !== undefined, (q) => q.where(afterKey("rt", after!)))
      .orderBy("rt.created_at")
      .orderBy("rt.id")
      .limit(limit)
      .execute()
      .then((rows) =>
        rows.map((x) => ({
          key: { created_at: x.created_at, id: x.id },
          fact: {
            subject: `${x.subject_resource}:${x.subject}`,
            relation: x.relation,
            object: `${x.object_resource}:${x.object}`,
            tenant: x.tenant,
          },
        })),
      ),
};

export type SnapshotFactKind = keyof typeof FACT_PAGES;

/**
 * The environment at one revision, as pages read when they are asked for: the policy first, then pages of at most
 * `pageSize` facts of one kind (`{users: [...]}`). Everything is read in one read transaction, so it is exactly at
 * `revision` whatever commits meanwhile; the transaction ends with the pages, or at `close` (for a caller that may
 * stop before the first page). Throws NOT_FOUND, before any page, when the environment is gone.
 */
export async function snapshotPages(
  store: Store,
  environmentId: string,
  pageSize = SNAPSHOT_PAGE,
): Promise<{ revision: number; pages: AsyncGenerator<EnvironmentData>; close: () => Promise<void> }> {
  const read = await openReadTransaction(store);
  const trx = read.trx;
  let released: Promise<void> | undefined;
  const release = () => (released ??= read.release());
  let revision: number;
  try {
    revision = await environmentRevision(trx, environmentId);
  } catch (error) {
    await release();
    throw error;
  }
  async function* pages(): AsyncGenerator<EnvironmentData> {
    try {
      yield await readPolicy(trx, environmentId);
      for (const kind of Object.keys(FACT_PAGES) as SnapshotFactKind[]) {
        let after: ListKey | undefined;
        for (;;) {
          const page = await FACT_PAGES[kind](trx, environmentId, after, pageSize);
          if (page.length === 0) break;
          after = page[page.length - 1]!.key;
          yield { [kind]: page.map((p) => p.fact) };
          if (page.length < pageSize) break;
        }
      }
    } finally {
      await release();
    }
  }
  return { revision, pages: pages(), close: release };
}

/**
 * The environment's snapshot as NDJSON lines, each read when it is asked for (`snapshotPages`): a header line (ids,
 * revision), a `policy` line, lines of at most `pageSize` facts of one kind (`{"users":[...]}`), then
 * `{"end":{"facts":n}}`, which tells a whole stream from a cut one.
 */
export async function snapshotLines(
  store: Store,
  ids: { environment_id: string; project_id: string; organization_id: string },
  pageSize = SNAPSHOT_PAGE,
): Promise<AsyncGenerator<string>> {
  const { revision, pages, close } = await snapshotPages(store, ids.environment_id, pageSize);
  const header: SnapshotHeader = { format: "gatehouse-snapshot/ndjson-1", ...ids, revision };
  async function* lines(): AsyncGenerator<string> {
    try {
      yield `${JSON.stringify(header)}\n`;
      let facts = 0;
      let policy = true;
      for await (const page of pages) {
        if (!policy) for (const list of Object.values(page)) facts += (list as unknown[]).length;
        yield `${JSON.stringify(policy ? { policy: page } : page)}\n`;
        policy = false;
      }
      yield `${JSON.stringify({ end: { facts } })}\n`;
    } finally {
      // Abandoned before the end: the pages' transaction ends too.
      await close();
    }
  }
  return lines();
}

/** The snapshot as a byte stream for an HTTP answer: the lines are read as the client takes them. */
export async function streamSnapshot(
  store: Store,
  ids: { environment_id: string; project_id: string; organization_id: string },
): Promise<Readable> {
  return Readable.from(await snapshotLines(store, ids), { objectMode: false });
}
