import crypto from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import type { Database } from "../db/types.ts";
import { displayPrefix, hashSecret, type SecretBox } from "../lib/secrets.ts";
import { ensureBuiltInResources } from "./built-in-resources.ts";
import {
  columnsOf,
  jsonColumnsOf,
  refsOf,
  rowValidator,
  type TransferredTable,
} from "./organization-rows.ts";
import {
  EXPORT_FORMAT,
  EXPORT_VERSION,
  TRANSFERRED_TABLES,
  TransferError,
  type ExportHeader,
  type Row,
} from "./organization-transfer.ts";

export interface ImportResult {
  organizationId: string;
  counts: Record<string, number>;
  /** The reissued keys with their new secrets: shown once, to be handed to whoever used the old ones. */
  keys: { id: string; name: string | null; scope: string; secret: string }[];
}

export interface ImportTarget {
  /** This deployment's region: the header's must be the same. */
  region: string;
  /** The largest JSON value a request may carry here (GATEHOUSE_BODY_LIMIT_BYTES): the bound of JSON columns. */
  maxValueBytes: number;
}

/** Log columns (API call bodies, decision chunks) hold what the service wrote, not one request: a wider bound. */
const MAX_LOG_TEXT = 64 * 1024 * 1024;
/** Bound values per statement: SQLite takes 32,766, PostgreSQL 65,535. */
const MAX_PARAMS = 30_000;
const MAX_CHUNK_ROWS = 1_000;

/** A line refused: says which, and why. */
const refuse = (line: number, why: string) => new TransferError(`line ${line}: ${why}`);

interface Pending {
  line: number;
  row: Row;
}

/**
 * Reads an export into this deployment's database, in one transaction: all of it, or nothing. Nothing in the file
 * is trusted (issue 36): the header's organization must be new here and its region this one; every row must be
 * the header organization's, name only rows of the same file, have an id new here, and hold values the API would
 * accept; the last line must be the trailer, whose counts and checksum match the lines before it. Rows are written
 * in multi-row statements, a chunk at a time.
 */
export async function importOrganization(
  db: Kysely<Database>,
  box: SecretBox,
  lines: AsyncIterable<string>,
  target: ImportTarget,
): Promise<ImportResult> {
  return db.transaction().execute(async (trx) => {
    const checksum = crypto.createHash("sha256");
    let header: ExportHeader | undefined;
    let trailerSeen = false;
    let lineNo = 0;
    let tableIndex = 0;
    const counts: Record<string, number> = {};
    const keys: ImportResult["keys"] = [];
    /** The ids of each table's rows read so far: what later rows may name. */
    const ids = new Map<string, Set<string>>();
    /** Members whose e-mail this deployment already knows: their id here. */
    const memberIds = new Map<string, string>();
    /** References within a table (a parent set, a key's creator), checked once the whole table is read. */
    const later: { line: number; table: string; column: string; value: string }[] = [];
    let pending: { table: TransferredTable; rows: Pending[] } | undefined;

    const idsOf = (table: string) => {
      let set = ids.get(table);
      if (!set) ids.set(table, (set = new Set()));
      return set;
    };

    const flush = async () => {
      if (!pending || pending.rows.length === 0) return;
      const { table, rows } = pending;
      pending = { table, rows: [] };
      await writeChunk(trx, box, table, rows, { memberIds, keys });
    };

    for await (const text of lines) {
      lineNo += 1;
      if (trailerSeen) throw refuse(lineNo, "a line after the trailer: the file is not one export");
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        throw refuse(lineNo, "not valid JSON (the file is cut short or damaged)");
      }
      if (header === undefined) {
        header = await checkHeader(trx, value, target);
        checksum.update(`${text}\n`);
        continue;
      }
      if (isObject(value) && "trailer" in value) {
        await flush();
        checkTrailer(value["trailer"], lineNo, checksum.digest("hex"), counts);
        trailerSeen = true;
        continue;
      }
      checksum.update(`${text}\n`);
      if (!isObject(value) || typeof value["table"] !== "string" || !isObject(value["row"]))
        throw refuse(lineNo, "not a row of an export ({table, row})");
      const table = value["table"] as TransferredTable;
      const row = value["row"];
      const index = (TRANSFERRED_TABLES as readonly string[]).indexOf(table);
      if (index < 0) throw refuse(lineNo, `unknown table '${table.slice(0, 64)}'`);
      if (index < tableIndex) throw refuse(lineNo, `${table}: out of order (the export writes it earlier)`);
      tableIndex = index;
      checkRow(lineNo, table, row, header, target, idsOf, later);
      if (table === "organizations" && counts["organizations"] !== undefined)
        throw refuse(lineNo, "organizations: a second organization");
      if (table !== "organizations" && counts["organizations"] === undefined)
        throw refuse(lineNo, `${table}: a row before the organization's`);
      counts[table] = (counts[table] ?? 0) + 1;
      if (pending?.table !== table) {
        await flush();
        pending = { table, rows: [] };
      }
      pending.rows.push({ line: lineNo, row });
      if (pending.rows.length >= chunkRows(table)) await flush();
    }
    if (header === undefined) throw new TransferError("the file is empty: not an organization export");
    if (!trailerSeen)
      throw new TransferError(
        `the file ends at line ${lineNo} without the export's trailer: it is cut short (or not a whole export); nothing was imported`,
      );
    for (const ref of later) {
      const target = refsOf(ref.table as TransferredTable)[ref.column] as string;
      if (!idsOf(target).has(ref.value))
        throw refuse(ref.line, `${ref.table}: ${ref.column} names no ${target} row of this export`);
    }
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

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The values of columns that older exports lack and that cannot be null. */
const LACKING_DEFAULTS: Partial<Record<TransferredTable, Row>> = { environments: { changes_kept_after: 0 } };

const chunkRows = (table: TransferredTable) =>
  Math.max(1, Math.min(MAX_CHUNK_ROWS, Math.floor(MAX_PARAMS / columnsOf(table).length)));

async function checkHeader(
  db: Transaction<Database>,
  value: unknown,
  target: ImportTarget,
): Promise<ExportHeader> {
  const header = value as Partial<ExportHeader> | null;
  if (!isObject(header) || header.format !== EXPORT_FORMAT)
    throw refuse(1, `not an organization export (no header of format ${EXPORT_FORMAT})`);
  if (header.version !== EXPORT_VERSION)
    throw refuse(
      1,
      `an export of version ${String(header.version)}; this version reads version ${EXPORT_VERSION} (export it again with this version)`,
    );
  const org = header.organization;
  const valid = rowValidator("organizations");
  if (!isObject(org) || !valid({ id: org.id, key: org.key, name: org.name, ...ORG_DEFAULTS }))
    throw refuse(1, "the header's organization is not a valid {id, key, name}");
  if (header.region !== target.region)
    throw refuse(
      1,
      `the export is for region '${String(header.region).slice(0, 64)}', this deployment is region '${target.region}': import it there, or export it again with --to ${target.region}`,
    );
  const here = await db
    .selectFrom("organizations")
    .select("id")
    .where((eb) => eb.or([eb("id", "=", org.id), eb("key", "=", org.key)]))
    .executeTakeFirst();
  if (here) throw refuse(1, `organization '${org.key}' is already in this database`);
  return header as ExportHeader;
}

/** The other columns of an organization row, for checking the header's id, key and name with the row's rules. */
const ORG_DEFAULTS = {
  settings: null,
  is_enterprise: 0,
  created_at: "2000-01-01T00:00:00.000+00:00",
  updated_at: "2000-01-01T00:00:00.000+00:00",
};

function checkTrailer(value: unknown, line: number, sha256: string, counts: Record<string, number>): void {
  if (!isObject(value) || typeof value["sha256"] !== "string" || !isObject(value["counts"]))
    throw refuse(line, "the trailer is not {lines, counts, sha256}");
  if (value["lines"] !== line - 1)
    throw refuse(
      line,
      `the trailer counts ${String(value["lines"])} lines before it, the file has ${line - 1}`,
    );
  if (value["sha256"] !== sha256)
    throw refuse(line, "the checksum of the lines before the trailer does not match: the file was altered");
  const tables = new Set([...Object.keys(value["counts"]), ...Object.keys(counts)]);
  for (const table of tables) {
    if ((value["counts"][table] ?? 0) !== (counts[table] ?? 0))
      throw refuse(
        line,
        `the trailer counts ${String(value["counts"][table] ?? 0)} rows of ${table}, the file has ${counts[table] ?? 0}`,
      );
  }
}

/** Refuses a row that the API would not accept, that is not the header organization's, or names rows outside the file. */
function checkRow(
  line: number,
  table: TransferredTable,
  row: Row,
  header: ExportHeader,
  target: ImportTarget,
  idsOf: (table: string) => Set<string>,
  later: { line: number; table: string; column: string; value: string }[],
): void {
  const valid = rowValidator(table);
  if (!valid(row)) {
    const error = valid.errors?.[0];
    const column = error?.instancePath.replace(/^\//, "") || error?.params?.["additionalProperty"] || "";
    throw refuse(line, `${table}: ${column} ${error?.message ?? "is not valid"}`.replace(/\s+/g, " "));
  }
  const orgId = header.organization.id;
  if (table === "organizations") {
    if (row["id"] !== orgId || row["key"] !== header.organization.key)
      throw refuse(line, "organizations: not the organization the header names");
  } else if ("organization_id" in row && row["organization_id"] !== orgId) {
    throw refuse(line, `${table}: organization_id names another organization than the header's (${orgId})`);
  }
  for (const [column, kind] of Object.entries(jsonColumnsOf(table))) {
    const text = row[column];
    if (typeof text !== "string") continue;
    const bound = kind === "text" ? MAX_LOG_TEXT : target.maxValueBytes;
    if (Buffer.byteLength(text) > bound)
      throw refuse(line, `${table}: ${column} is longer than ${bound} bytes`);
    if (kind === "text") continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw refuse(line, `${table}: ${column} is not JSON`);
    }
    if (kind === "object" && !isObject(parsed))
      throw refuse(line, `${table}: ${column} is not a JSON object`);
  }
  for (const [column, refTable] of Object.entries(refsOf(table))) {
    const value = row[column];
    if (typeof value !== "string") continue;
    // A table naming its own rows (a parent set, a key's creator) may name one further on: checked at the end.
    if (refTable === table) later.push({ line, table, column, value });
    else if (!idsOf(refTable).has(value))
      throw refuse(line, `${table}: ${column} names no ${refTable} row of this export (${value})`);
  }
  if (typeof row["id"] === "string") {
    const seen = idsOf(table);
    if (seen.has(row["id"])) throw refuse(line, `${table}: id ${row["id"]} appears twice`);
    seen.add(row["id"]);
  }
}

/**
 * Inserts a chunk of one table's rows in one statement, after checking that none of their ids exists here (in
 * any organization). Members whose e-mail is known here are that member; keys get new secrets.
 */
async function writeChunk(
  trx: Transaction<Database>,
  box: SecretBox,
  table: TransferredTable,
  chunk: Pending[],
  state: { memberIds: Map<string, string>; keys: ImportResult["keys"] },
): Promise<void> {
  let rows = chunk;
  if (table === "members") {
    const emails = chunk.map((p) => String(p.row["email"]));
    const known = new Map(
      (await trx.selectFrom("members").select(["id", "email"]).where("email", "in", emails).execute()).map(
        (m) => [m.email, m.id],
      ),
    );
    rows = [];
    for (const p of chunk) {
      const id = known.get(String(p.row["email"]));
      if (id === undefined) rows.push(p);
      else state.memberIds.set(String(p.row["id"]), id);
    }
  }
  if (rows.length === 0) return;
  if (columnsOf(table).includes("id")) {
    const byId = new Map(rows.map((p) => [String(p.row["id"]), p.line]));
    const taken = await trx
      .selectFrom(table as "users")
      .select("id")
      .where("id", "in", [...byId.keys()])
      .executeTakeFirst();
    if (taken)
      throw refuse(byId.get(taken.id) ?? 0, `${table}: id ${taken.id} already exists in this database`);
  }
  const columns = columnsOf(table);
  // Every row with every column, in one order: a column an older export lacks is null, or its default.
  const defaults = LACKING_DEFAULTS[table] ?? {};
  const full = (row: Row): Row => Object.fromEntries(columns.map((c) => [c, row[c] ?? defaults[c] ?? null]));
  const values = rows.map(({ row: given }) => {
    const row = full(given);
    if (table === "member_grants")
      return { ...row, member_id: state.memberIds.get(String(row["member_id"])) ?? row["member_id"] };
    if (table !== "api_keys") return row;
    const secret = box.newSecret();
    const creator = row["created_by_member_id"];
    state.keys.push({
      id: String(row["id"]),
      name: row["name"] as string | null,
      scope: scopeOf(row),
      secret,
    });
    return {
      ...row,
      secret_hash: hashSecret(secret),
      secret_prefix: displayPrefix(secret),
      secret_sealed: box.seal(secret),
      created_by_member_id: typeof creator === "string" ? (state.memberIds.get(creator) ?? creator) : null,
    };
  });
  await trx
    .insertInto(table)
    .values(values as never)
    .execute();
}

const scopeOf = (row: Row): string =>
  row["environment_id"]
    ? `environment ${String(row["environment_id"])}`
    : row["project_id"]
      ? `project ${String(row["project_id"])}`
      : "organization";
