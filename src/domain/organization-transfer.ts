import { sql, type Kysely } from "kysely";
import type { Database } from "../db/types.ts";
import { idOrKey } from "../lib/ids.ts";
import { displayPrefix, hashSecret, type SecretBox } from "../lib/secrets.ts";
import { ensureBuiltInResources } from "./built-in-resources.ts";

/**
 * Moving an organization between regions (docs/regions.md): every row that is the organization's, as lines of
 * JSON (a header, then one `{table, row}` per row), written by one deployment's database and read into another's.
 * API keys are reissued by the importing deployment (their secrets name the region); members keep their password
 * hashes, and one whose e-mail the target already knows is that member there.
 */

/** In the order rows can be inserted (what a row refers to comes first); deleted in the reverse order. */
export const TRANSFERRED_TABLES = [
  "organizations",
  "projects",
  "environments",
  "members",
  "member_grants",
  "api_keys",
  "tenants",
  "changes",
  "resources",
  "resource_actions",
  "resource_attributes",
  "action_groups",
  "action_group_actions",
  "roles",
  "role_permissions",
  "role_extends",
  "relations",
  "role_derivations",
  "users",
  "resource_instances",
  "role_assignments",
  "relationship_tuples",
  "condition_sets",
  "condition_set_rules",
  "proxy_configs",
  "api_log",
  "tasks",
  "decision_log_chunks",
] as const satisfies readonly (keyof Database)[];

/**
 * Not moved: sessions (people log in again at the new region) and pending invites (their links name the old
 * region's URL: invite again). Setup links belong to a deployment, not to an organization.
 */
export const LEFT_BEHIND = ["sessions", "invites"] as const satisfies readonly (keyof Database)[];
export const DEPLOYMENT_TABLES: readonly (keyof Database)[] = ["setup_tokens"];
/**
 * Not moved, rebuilt: the list counters of migration 0013 are kept by triggers, so the receiving side counts the
 * moved rows as they are inserted, and the sending side's go with its environments.
 */
export const DERIVED_TABLES: readonly (keyof Database)[] = ["list_counts"];

type Table = (typeof TRANSFERRED_TABLES)[number];
type Row = Record<string, unknown>;

export const EXPORT_FORMAT = "gatehouse-organization-export";

export interface ExportHeader {
  format: typeof EXPORT_FORMAT;
  version: 1;
  organization: { id: string; key: string; name: string };
  region: string;
  exported_at: string;
}

export interface ExportLine {
  table: Table;
  row: Row;
}

/** Tables whose rows name only their environment. */
const BY_ENVIRONMENT = new Set<string>([
  "changes",
  "decision_log_chunks",
  "action_group_actions",
  "role_permissions",
  "role_extends",
  "role_derivations",
]);

/** The condition on a table's rows that are the organization's (members: those with a grant in it). */
function belongsTo(table: Table | (typeof LEFT_BEHIND)[number], orgId: string) {
  if (table === "organizations") return sql`id = ${orgId}`;
  if (table === "members")
    return sql`id in (select member_id from member_grants where organization_id = ${orgId})`;
  if (BY_ENVIRONMENT.has(table))
    return sql`environment_id in (select id from environments where organization_id = ${orgId})`;
  return sql`organization_id = ${orgId}`;
}

/** The rows of `table` that are the organization's, read a page at a time. */
async function* rowsOf(db: Kysely<Database>, table: Table, orgId: string): AsyncGenerator<Row> {
  const belongs = belongsTo(table, orgId);
  const PAGE = 1000;
  for (let offset = 0; ; offset += PAGE) {
    const { rows } = await sql<Row>`select * from ${sql.table(table)} where ${belongs}
      order by 1 limit ${PAGE} offset ${offset}`.execute(db);
    yield* rows;
    if (rows.length < PAGE) return;
  }
}

/** The organization named by id or key, or undefined. */
export async function findOrganization(db: Kysely<Database>, ref: string) {
  const { column, value } = idOrKey(ref);
  return db
    .selectFrom("organizations")
    .select(["id", "key", "name"])
    .where(column, "=", value)
    .executeTakeFirst();
}

/** The export: its header, then every row of the organization, table by table in insertion order. */
export async function* exportOrganization(
  db: Kysely<Database>,
  organization: { id: string; key: string; name: string },
  region: string,
): AsyncGenerator<ExportHeader | ExportLine> {
  yield { format: EXPORT_FORMAT, version: 1, organization, region, exported_at: new Date().toISOString() };
  for (const table of TRANSFERRED_TABLES) {
    for await (const row of rowsOf(db, table, organization.id)) {
      // Sessions' and keys' secrets stay behind: keys are reissued where the organization goes.
      if (table === "api_keys") yield { table, row: { ...row, secret_hash: null, secret_sealed: null } };
      else yield { table, row };
    }
  }
}

export interface ImportResult {
  organizationId: string;
  counts: Record<string, number>;
  /** The reissued keys with their new secrets: shown once, to be handed to whoever used the old ones. */
  keys: { id: string; name: string | null; scope: string; secret: string }[];
}

export class TransferError extends Error {}

/**
 * Reads an export into this deployment's database in one transaction: all of it, or nothing. Refused when the
 * organization (its id or key) is already here.
 */
export async function importOrganization(
  db: Kysely<Database>,
  box: SecretBox,
  lines: AsyncIterable<unknown>,
): Promise<ImportResult> {
  return db.transaction().execute(async (trx) => {
    let header: ExportHeader | undefined;
    const counts: Record<string, number> = {};
    const keys: ImportResult["keys"] = [];
    /** Members whose e-mail this deployment already knows: their id here. */
    const memberIds = new Map<string, string>();
    for await (const line of lines) {
      if (header === undefined) {
        header = line as ExportHeader;
        if (header?.format !== EXPORT_FORMAT || header.version !== 1)
          throw new TransferError(`not an organization export (expected format ${EXPORT_FORMAT}, version 1)`);
        const here = await trx
          .selectFrom("organizations")
          .select("id")
          .where((eb) =>
            eb.or([eb("id", "=", header!.organization.id), eb("key", "=", header!.organization.key)]),
          )
          .executeTakeFirst();
        if (here)
          throw new TransferError(`organization '${header.organization.key}' is already in this database`);
        continue;
      }
      const { table, row } = line as ExportLine;
      if (!(TRANSFERRED_TABLES as readonly string[]).includes(table))
        throw new TransferError(`unknown table '${String(table)}' in the export`);
      let values: Row = row;
      if (table === "members") {
        const known = await trx
          .selectFrom("members")
          .select("id")
          .where("email", "=", String(row["email"]))
          .executeTakeFirst();
        if (known) {
          memberIds.set(String(row["id"]), known.id);
          continue;
        }
      } else if (table === "member_grants") {
        values = { ...row, member_id: memberIds.get(String(row["member_id"])) ?? row["member_id"] };
      } else if (table === "api_keys") {
        const secret = box.newSecret();
        const creator = row["created_by_member_id"];
        values = {
          ...row,
          secret_hash: hashSecret(secret),
          secret_prefix: displayPrefix(secret),
          secret_sealed: box.seal(secret),
          created_by_member_id: typeof creator === "string" ? (memberIds.get(creator) ?? creator) : null,
        };
        keys.push({ id: String(row["id"]), name: row["name"] as string | null, scope: scopeOf(row), secret });
      }
      await trx
        .insertInto(table)
        .values(values as never)
        .execute();
      counts[table] = (counts[table] ?? 0) + 1;
    }
    if (header === undefined) throw new TransferError("the export is empty");
    // An export from a deployment before built-in resources came with every environment lacks them.
    const environments = await trx
      .selectFrom("environments")
      .select(["id", "organization_id", "project_id"])
      .where("organization_id", "=", header.organization.id)
      .execute();
    await ensureBuiltInResources(trx, environments);
    return { organizationId: header.organization.id, counts, keys };
  });
}

const scopeOf = (row: Row): string =>
  row["environment_id"]
    ? `environment ${String(row["environment_id"])}`
    : row["project_id"]
      ? `project ${String(row["project_id"])}`
      : "organization";

/**
 * Deletes every row of the organization, in the reverse order of insertion, in one transaction; members who hold
 * no grant elsewhere go with it. Returns the rows deleted per table.
 */
export async function deleteOrganization(
  db: Kysely<Database>,
  orgId: string,
): Promise<Record<string, number>> {
  return db.transaction().execute(async (trx) => {
    const counts: Record<string, number> = {};
    const members = (
      await trx.selectFrom("member_grants").select("member_id").where("organization_id", "=", orgId).execute()
    ).map((g) => g.member_id);
    for (const table of [...LEFT_BEHIND, ...[...TRANSFERRED_TABLES].reverse()]) {
      if (table === "members") continue;
      const gone = await sql`delete from ${sql.table(table)} where ${belongsTo(table, orgId)}`.execute(trx);
      counts[table] = Number(gone.numAffectedRows ?? 0);
    }
    // Members of no other organization now.
    if (members.length > 0) {
      const gone = await trx
        .deleteFrom("members")
        .where("id", "in", members)
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom("member_grants")
                .select("member_id")
                .whereRef("member_grants.member_id", "=", "members.id"),
            ),
          ),
        )
        .executeTakeFirst();
      counts["members"] = Number(gone.numDeletedRows);
    }
    return counts;
  });
}
