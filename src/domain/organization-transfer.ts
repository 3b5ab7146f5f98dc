import crypto from "node:crypto";
import { sql, type Kysely } from "kysely";
import type { Database } from "../db/types.ts";
import { idOrKey } from "../lib/ids.ts";
import { now } from "../lib/time.ts";
import { gunzipText } from "../lib/gzip-text.ts";
import { orderOf, type TransferredTable } from "./organization-rows.ts";
import { SCHEMA_TABLES } from "./schema/schema-tables.ts";

/**
 * Moving an organization between regions (docs/regions.md): every row that is the organization's, as lines of
 * JSON (a header, one `{table, row}` per row, a trailer with counts and a checksum), written by one deployment's
 * database and read into another's (organization-import.ts). While it moves it can be frozen; a delete refuses an
 * organization whose rows changed since its last export.
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
  ...SCHEMA_TABLES,
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
 * region's URL: invite again), and webhooks (their secrets are sealed with this region's key, and their
 * deliveries name this region's objects: subscribe again), and login settings and SSO sign-ins in progress (the
 * client secret is sealed with this region's key: set them again). Setup links belong to a deployment, not to an
 * organization, and members' second factors to the member at this deployment (sealed too: enrol again).
 */
export const LEFT_BEHIND = [
  "sessions",
  "invites",
  "webhook_deliveries",
  "webhook_cursors",
  "webhook_subscriptions",
  "sso_logins",
  "org_login_settings",
] as const satisfies readonly (keyof Database)[];
export const DEPLOYMENT_TABLES: readonly (keyof Database)[] = [
  "setup_tokens",
  "member_totp",
  "member_recovery_codes",
];
/**
 * Not moved, rebuilt: the list counters of migration 0013 are kept by triggers, so the receiving side counts the
 * moved rows as they are inserted, and the sending side's go with its environments.
 */
export const DERIVED_TABLES: readonly (keyof Database)[] = ["list_counts"];

type Table = (typeof TRANSFERRED_TABLES)[number];
export type Row = Record<string, unknown>;

// Every table the export moves has its rules (organization-rows.ts), and every rule is of a moved table.
const _sameTables: [Exclude<Table, TransferredTable> | Exclude<TransferredTable, Table>] extends [never]
  ? true
  : never = true;
void _sameTables;

export const EXPORT_FORMAT = "gatehouse-organization-export";
export const EXPORT_VERSION = 2;

export interface ExportHeader {
  format: typeof EXPORT_FORMAT;
  version: typeof EXPORT_VERSION;
  organization: { id: string; key: string; name: string };
  /** The region the export is for (`orgs export --to`): only a deployment of that region imports it. */
  region: string;
  /** The region it was exported from. */
  from_region: string;
  exported_at: string;
}

export interface ExportLine {
  table: Table;
  row: Row;
}

/**
 * The last line of an export: how many lines precede it, the rows per table, and the SHA-256 (hex) of every
 * preceding line with its newline. A file without it, or whose lines do not match it, is cut short or altered.
 */
export interface ExportTrailer {
  trailer: { lines: number; counts: Record<string, number>; sha256: string };
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
  if (table === "webhook_deliveries" || table === "webhook_cursors")
    return sql`subscription_id in (select id from webhook_subscriptions where organization_id = ${orgId})`;
  if (BY_ENVIRONMENT.has(table))
    return sql`environment_id in (select id from environments where organization_id = ${orgId})`;
  return sql`organization_id = ${orgId}`;
}

const PAGE = 1000;

/**
 * The rows of `table` that are the organization's, in the order of its key, read a page at a time: each page
 * seeks from the last row read (`(a, b) > (x, y)`, a row-value comparison both databases run on the key's index),
 * so a page costs the same however deep.
 */
async function* rowsOf(db: Kysely<Database>, table: Table, orgId: string): AsyncGenerator<Row> {
  const belongs = belongsTo(table, orgId);
  const order = orderOf(table);
  const orderBy = sql.join(order.map((c) => sql.ref(c)));
  let last: Row | undefined;
  for (;;) {
    const from = last ? sql`and (${orderBy}) > (${sql.join(order.map((c) => last![c]))})` : sql``;
    const { rows } = await sql<Row>`select * from ${sql.table(table)} where ${belongs} ${from}
      order by ${orderBy} limit ${PAGE}`.execute(db);
    yield* rows;
    if (rows.length < PAGE) return;
    last = rows.at(-1);
  }
}

/** An API log row as it travels: a response body stored compressed goes as text, like any other. */
async function withResponseText(row: Row): Promise<Row> {
  const { response_body_gzip: gzip, ...rest } = row;
  return gzip instanceof Uint8Array ? { ...rest, response_body: await gunzipText(gzip) } : rest;
}

/**
 * Every row of the organization as it travels, table by table in insertion order: keys' secrets stay behind
 * (keys are reissued where the organization goes), and so does the organization's move state.
 */
async function* linesOf(db: Kysely<Database>, orgId: string): AsyncGenerator<ExportLine> {
  for (const table of TRANSFERRED_TABLES) {
    for await (const row of rowsOf(db, table, orgId)) {
      if (table === "api_keys") yield { table, row: { ...row, secret_hash: null, secret_sealed: null } };
      else if (table === "api_log") yield { table, row: await withResponseText(row) };
      else if (table === "organizations")
        yield { table, row: { ...row, frozen_at: null, exported_at: null, exported_digest: null } };
      else yield { table, row };
    }
  }
}

/**
 * What a change to the organization changes. The logs (API calls, decisions) grow with reads and are left out,
 * and so are the columns that reads and logins move (a key's last use, a member's last login), and the change
 * feed, which its retention purge shortens (every write moves its environment's revision, which counts).
 */
const NOT_CHANGES = new Set<string>(["api_log", "decision_log_chunks", "changes"]);
const VOLATILE: Partial<Record<Table, string[]>> = {
  environments: ["changes_kept_after"],
  api_keys: ["last_used_at"],
  members: ["last_login", "last_ip", "logins_count", "updated_at"],
  tasks: ["lease_owner", "lease_expires_at"],
};

function digestRow(hash: crypto.Hash, { table, row }: ExportLine): void {
  if (NOT_CHANGES.has(table)) return;
  const volatile = VOLATILE[table];
  const kept = volatile
    ? Object.fromEntries(Object.entries(row).filter(([c]) => !volatile.includes(c)))
    : row;
  hash.update(`${table}\t${JSON.stringify(kept)}\n`);
}

/** The digest of the organization's rows as they are now (what `exported_digest` was at its export). */
export async function organizationDigest(db: Kysely<Database>, orgId: string): Promise<string> {
  const hash = crypto.createHash("sha256");
  for await (const line of linesOf(db, orgId)) digestRow(hash, line);
  return hash.digest("hex");
}

/** The organization named by id or key, or undefined. */
export async function findOrganization(db: Kysely<Database>, ref: string) {
  const { column, value } = idOrKey(ref);
  return db
    .selectFrom("organizations")
    .select(["id", "key", "name", "frozen_at", "exported_at", "exported_digest"])
    .where(column, "=", value)
    .executeTakeFirst();
}

/**
 * Writes the export line by line (each without its newline): the header, every row, then the trailer. Returns
 * the rows written and the digest to record once the file is safely written (`recordExport`).
 */
export async function writeExport(
  db: Kysely<Database>,
  organization: { id: string; key: string; name: string },
  regions: { from: string; to: string },
  write: (line: string) => Promise<void>,
): Promise<{ rows: number; digest: string }> {
  const checksum = crypto.createHash("sha256");
  const digest = crypto.createHash("sha256");
  const counts: Record<string, number> = {};
  let lines = 0;
  const put = async (value: unknown) => {
    const text = JSON.stringify(value);
    checksum.update(`${text}\n`);
    lines += 1;
    await write(text);
  };
  const { id, key, name } = organization;
  const header: ExportHeader = {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    organization: { id, key, name },
    region: regions.to,
    from_region: regions.from,
    exported_at: now(),
  };
  await put(header);
  for await (const line of linesOf(db, organization.id)) {
    digestRow(digest, line);
    counts[line.table] = (counts[line.table] ?? 0) + 1;
    await put(line);
  }
  const trailer: ExportTrailer = { trailer: { lines, counts, sha256: checksum.digest("hex") } };
  await write(JSON.stringify(trailer));
  return { rows: lines - 1, digest: digest.digest("hex") };
}

/** Notes the export, so that `orgs delete` can tell whether the organization changed since. */
export async function recordExport(db: Kysely<Database>, orgId: string, digest: string): Promise<void> {
  await db
    .updateTable("organizations")
    .set({ exported_at: now(), exported_digest: digest })
    .where("id", "=", orgId)
    .execute();
}

/** Freezes (writes refused with 423 while it moves) or thaws the organization; returns its freeze time or null. */
export async function setFrozen(
  db: Kysely<Database>,
  orgId: string,
  frozen: boolean,
): Promise<string | null> {
  const at = frozen ? now() : null;
  await db.updateTable("organizations").set({ frozen_at: at }).where("id", "=", orgId).execute();
  return at;
}

export class TransferError extends Error {}

async function assertUnchangedSinceExport(
  db: Kysely<Database>,
  organization: { id: string; key: string },
): Promise<void> {
  const { exported_at: exportedAt, exported_digest: digest } = await db
    .selectFrom("organizations")
    .select(["exported_at", "exported_digest"])
    .where("id", "=", organization.id)
    .executeTakeFirstOrThrow();
  const again = `export it again (freeze it first: gatehouse orgs freeze --org ${organization.key}), or add --force`;
  if (exportedAt === null || digest === null)
    throw new TransferError(`organization '${organization.key}' was never exported: ${again}`);
  if ((await organizationDigest(db, organization.id)) !== digest)
    throw new TransferError(
      `organization '${organization.key}' changed since its export at ${exportedAt}: deleting it would lose ` +
        `those changes; ${again}`,
    );
}

/**
 * Deletes every row of the organization, in the reverse order of insertion, in one transaction; members who hold
 * no grant elsewhere go with it. Returns the rows deleted per table. Unless `force`, refused when the organization
 * was never exported or its rows changed since its last export (those writes would be lost with it).
 */
export async function deleteOrganization(
  db: Kysely<Database>,
  organization: { id: string; key: string },
  { force = false } = {},
): Promise<Record<string, number>> {
  const orgId = organization.id;
  return db.transaction().execute(async (trx) => {
    if (!force) await assertUnchangedSinceExport(trx, organization);
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
