import type { Kysely, Selectable } from "kysely";
import type { Database, OrganizationsTable } from "../db/types.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { duplicate, notFound } from "../lib/errors.ts";
import { fromJsonObject, toJson } from "../lib/json.ts";
import type { SecretBox } from "../lib/secrets.ts";
import { now } from "../lib/time.ts";
import { MIN_RATE_LIMIT_PER_MINUTE } from "../config.ts";
import { idOrKey, newId } from "../lib/ids.ts";
import type { OrganizationCreate, OrganizationRead } from "./organization.schemas.ts";
import { createKeyRecord } from "./api-key-records.ts";
import { createProjectRecords } from "./project-records.ts";

/** Organization records: created by the organizations module and by the first start; read by the rate limiter. */

export type OrganizationRow = Selectable<OrganizationsTable>;

/** The organization as the API shows it; `home` is the region of the deployment (every organization of its database). */
export const organizationRead = (
  row: OrganizationRow,
  home: { region: string; api_url: string },
): OrganizationRead => ({
  id: row.id,
  key: row.key,
  name: row.name,
  is_enterprise: row.is_enterprise === 1,
  settings: fromJsonObject(row.settings),
  created_at: row.created_at,
  updated_at: row.updated_at,
  ...home,
});

export interface CreatedOrganization {
  organization: OrganizationRow;
  adminKeyId: string;
  adminKeySecret: string;
}

/**
 * A new organization comes with a `default` project (production and development environments) and an
 * organization admin key, so its owner can start at once.
 */
export async function createOrganizationRecords(
  db: Kysely<Database>,
  box: SecretBox,
  input: Omit<OrganizationCreate, "region">,
  adminSecret?: string,
): Promise<CreatedOrganization> {
  const at = now();
  const inserted = {
    id: newId(),
    key: input.key,
    name: input.name,
    settings: toJson(input.settings),
    is_enterprise: 0,
    created_at: at,
    updated_at: at,
  };
  const organization: OrganizationRow = {
    ...inserted,
    frozen_at: null,
    exported_at: null,
    exported_digest: null,
  };
  const key = await db.transaction().execute(async (trx) => {
    try {
      await trx.insertInto("organizations").values(inserted).execute();
    } catch (e) {
      if (isUniqueViolation(e)) throw duplicate("organization", input.key);
      throw e;
    }
    await createProjectRecords(trx, box, organization.id, { key: "default", name: "Default Project" });
    return createKeyRecord(trx, box, {
      organizationId: organization.id,
      objectType: "org",
      name: "organization admin key",
      ...(adminSecret !== undefined && { secret: adminSecret }),
    });
  });
  return { organization, adminKeyId: key.id, adminKeySecret: key.secret };
}

/** An organization by id or key. */
export const findOrganization = (db: Kysely<Database>, ref: string): Promise<OrganizationRow | undefined> => {
  const { column, value } = idOrKey(ref);
  return db.selectFrom("organizations").selectAll().where(column, "=", value).executeTakeFirst();
};

/** The organization's own rate limit (settings.rate_limit_per_minute), when it has a valid one. */
/** The organization a path names, which must be the caller's own (404 otherwise). */
export async function ownOrganizationId(
  db: Kysely<Database>,
  principal: { organizationId: string },
  ref: string,
): Promise<string> {
  const { column, value } = idOrKey(ref);
  const row = await db
    .selectFrom("organizations")
    .select("id")
    .where("id", "=", principal.organizationId)
    .where(column, "=", value)
    .executeTakeFirst();
  if (!row) throw notFound("organization", ref);
  return row.id;
}

export async function organizationRateLimit(
  db: Kysely<Database>,
  organizationId: string,
): Promise<number | undefined> {
  const row = await db
    .selectFrom("organizations")
    .select("settings")
    .where("id", "=", organizationId)
    .executeTakeFirst();
  const value = fromJsonObject(row?.settings)["rate_limit_per_minute"];
  // A value below the floor (stored before there was one) counts as the floor: it must not lock keys out.
  return Number.isSafeInteger(value) && (value as number) > 0
    ? Math.max(value as number, MIN_RATE_LIMIT_PER_MINUTE)
    : undefined;
}

/** Sets the organization's own rate limit (undefined: none, the server's applies), keeping its other settings. */
export async function setOrganizationRateLimit(
  db: Kysely<Database>,
  organizationId: string,
  limit: number | undefined,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom("organizations")
      .select("settings")
      .where("id", "=", organizationId)
      .executeTakeFirstOrThrow();
    const settings = fromJsonObject(row.settings);
    if (limit === undefined) delete settings["rate_limit_per_minute"];
    else settings["rate_limit_per_minute"] = limit;
    await trx
      .updateTable("organizations")
      .set({ settings: toJson(settings), updated_at: now() })
      .where("id", "=", organizationId)
      .execute();
  });
}
