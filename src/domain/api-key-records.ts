import type { Db } from "../db/db.ts";
import type { Kysely, Selectable } from "kysely";
import type { ApiKeysTable, Database } from "../db/types.ts";
import type { AccessLevel, Principal, ScopeLevel } from "../lib/access.ts";
import { newId } from "../lib/ids.ts";
import { displayPrefix, hashSecret, type SecretBox } from "../lib/secrets.ts";
import { now } from "../lib/time.ts";
import { pathLookup, pathRowsOf, selectPathRows, type PathRefs, type PathRows } from "./path-rows.ts";
import { QueryShapes } from "../db/query-shapes.ts";

/** API key records, shared by the modules that create keys: api-keys, environments (each has its own key), organizations. */

export type ApiKeyRow = Selectable<ApiKeysTable>;

export interface NewKey {
  organizationId: string;
  projectId?: string | null;
  environmentId?: string | null;
  objectType: ScopeLevel;
  accessLevel?: AccessLevel;
  ownerType?: string;
  name?: string | null;
  /** The member whose session creates the key. */
  createdByMemberId?: string | null;
  /** The key whose call creates the key. */
  createdByKeyId?: string | null;
  /** A secret chosen by the operator (the bootstrap key); generated when absent. */
  secret?: string;
}

/** Inserts a key and returns it with its secret: the only time the caller gets to see a new secret for free. */
export async function createKeyRecord(
  db: Db,
  box: SecretBox,
  key: NewKey,
): Promise<ApiKeyRow & { secret: string }> {
  const secret = key.secret ?? box.newSecret();
  const row: ApiKeyRow = {
    id: newId(),
    organization_id: key.organizationId,
    project_id: key.projectId ?? null,
    environment_id: key.environmentId ?? null,
    object_type: key.objectType,
    access_level: key.accessLevel ?? "admin",
    owner_type: key.ownerType ?? "member",
    name: key.name ?? null,
    secret_hash: hashSecret(secret),
    secret_prefix: displayPrefix(secret),
    secret_sealed: box.seal(secret),
    created_at: now(),
    last_used_at: null,
    created_by_member_id: key.createdByMemberId ?? null,
    created_by_key_id: key.createdByKeyId ?? null,
  };
  // The creating key's column only when set, so that keys can still be made on a database migrated before 0018.
  const { created_by_key_id: createdByKeyId, ...rest } = row;
  await db
    .insertInto("api_keys")
    .values(createdByKeyId === null ? rest : row)
    .execute();
  return { ...row, secret };
}

/** The key's lookup, built once per shape (QueryShapes): it runs before every keyed call. */
const shapes = new QueryShapes();

/** Who calls with this secret: the key, its scope and access; null for an unknown secret. */
export async function findPrincipal(db: Kysely<Database>, secret: string): Promise<Principal | null> {
  const [row] = await shapes.rows(db, "key", [hashSecret(secret)], ([hash]) =>
    principalQuery(db, hash as string),
  );
  return row ? principalOf(row) : null;
}

/**
 * `findPrincipal`, and in the same read the rows that a route's path names in the key's organization (for
 * `resolvePathScope`, which checks the key's scope first).
 */
export async function findPrincipalAndPath(
  db: Kysely<Database>,
  secret: string,
  refs: PathRefs,
): Promise<{ principal: Principal; path: PathRows } | null> {
  const { project, environment } = pathLookup(refs);
  const values = [hashSecret(secret), project.value, ...(environment ? [environment.value] : [])];
  const shape = `key/${project.column}/${environment?.column ?? "-"}`;
  const [row] = await shapes.rows(db, shape, values, ([hash, p, e]) =>
    selectPathRows(principalQuery(db, hash as string), "k.organization_id", {
      project: { column: project.column, value: p as string },
      environment: environment && { column: environment.column, value: e as string },
    }),
  );
  return row ? { principal: principalOf(row), path: pathRowsOf(row) } : null;
}

const principalQuery = (db: Kysely<Database>, secretHash: string) =>
  db
    .selectFrom("api_keys as k")
    .leftJoin("projects as p", "p.id", "k.project_id")
    .leftJoin("environments as e", "e.id", "k.environment_id")
    .select([
      "k.id",
      "k.name",
      "k.organization_id",
      "k.project_id",
      "k.environment_id",
      "k.object_type",
      "k.access_level",
      "p.key as project_key",
      "e.key as environment_key",
    ])
    .where("k.secret_hash", "=", secretHash);

type PrincipalRow = NonNullable<Awaited<ReturnType<ReturnType<typeof principalQuery>["executeTakeFirst"]>>>;

const principalOf = (row: PrincipalRow): Principal => ({
  keyId: row.id,
  keyName: row.name,
  organizationId: row.organization_id,
  projectId: row.project_id,
  projectKey: row.project_key,
  environmentId: row.environment_id,
  environmentKey: row.environment_key,
  level: row.object_type as ScopeLevel,
  access: row.access_level as AccessLevel,
});

/** A key's use is written at most this often. */
const KEY_USE_INTERVAL_MS = 60_000;

/** Keys' last use (`last_used_at`), noted in memory on the hot path and written in batches off it. */
export interface KeyUseRecorder {
  /** Notes a use of the key; costs a map lookup. A key noted less than a minute ago is left alone. */
  used(keyId: string): void;
  /** Writes what was noted (done every `flushMs` and at close). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export function createKeyUseRecorder(
  db: Kysely<Database>,
  options: { flushMs?: number; clock?: () => number; onError?: (error: unknown) => void } = {},
): KeyUseRecorder {
  const clock = options.clock ?? Date.now;
  const notedAt = new Map<string, number>();
  let pending = new Set<string>();
  let writing: Promise<void> = Promise.resolve();

  async function write(ids: string[]): Promise<void> {
    try {
      // One statement per batch: the write's time stands for every use noted since the last batch.
      for (let i = 0; i < ids.length; i += 500) {
        await db
          .updateTable("api_keys")
          .set({ last_used_at: now() })
          .where("id", "in", ids.slice(i, i + 500))
          .execute();
      }
    } catch (error) {
      options.onError?.(error);
    }
  }

  function flush(): Promise<void> {
    const at = clock();
    for (const [id, noted] of notedAt) if (at - noted >= KEY_USE_INTERVAL_MS) notedAt.delete(id);
    if (pending.size === 0) return writing;
    const ids = [...pending];
    pending = new Set();
    writing = writing.then(() => write(ids));
    return writing;
  }

  const timer = setInterval(() => void flush(), options.flushMs ?? 5_000);
  timer.unref();
  return {
    used(keyId) {
      const at = clock();
      const noted = notedAt.get(keyId);
      if (noted !== undefined && at - noted < KEY_USE_INTERVAL_MS) return;
      notedAt.set(keyId, at);
      pending.add(keyId);
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
