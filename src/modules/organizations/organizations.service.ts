import type { Kysely, Selectable } from "kysely";
import type { Database, OrganizationsTable } from "../../db/types.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import { type Principal } from "../../lib/access.ts";
import { duplicate, notFound } from "../../lib/errors.ts";
import { idOrKey, newId } from "../../lib/ids.ts";
import { fromJsonObject, toJson } from "../../lib/json.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import { now } from "../../lib/time.ts";
import { offsetOf, type PageRequest } from "../../lib/pagination.ts";
import { createKeyRecord } from "../../domain/api-key-records.ts";
import { createProjectRecords } from "../../domain/project-records.ts";
import type { OrganizationCreate, OrganizationRead, OrganizationUpdate } from "./organizations.schemas.ts";

type OrganizationRow = Selectable<OrganizationsTable>;

export const organizationRead = (row: OrganizationRow): OrganizationRead => ({
  id: row.id,
  key: row.key,
  name: row.name,
  is_enterprise: row.is_enterprise === 1,
  settings: fromJsonObject(row.settings),
  created_at: row.created_at,
  updated_at: row.updated_at,
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
  input: OrganizationCreate,
  adminSecret?: string,
): Promise<CreatedOrganization> {
  const at = now();
  const organization: OrganizationRow = {
    id: newId(),
    key: input.key,
    name: input.name,
    settings: toJson(input.settings),
    is_enterprise: 0,
    created_at: at,
    updated_at: at,
  };
  const key = await db.transaction().execute(async (trx) => {
    try {
      await trx.insertInto("organizations").values(organization).execute();
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

/** The organization's own rate limit (settings.rate_limit_per_minute), when it has a valid one. */
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
  return Number.isSafeInteger(value) && (value as number) > 0 ? (value as number) : undefined;
}

export function createOrganizationsService(deps: {
  db: Kysely<Database>;
  box: SecretBox;
  /** Told after an organization's settings change (the rate limiter drops its cached limit). */
  onSettingsChanged?: (organizationId: string) => void;
}) {
  const { db, box } = deps;

  const ownRow = async (id: string) =>
    db.selectFrom("organizations").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

  /** Only the key's own organization exists for it: any other reference is "not found". */
  async function own(principal: Principal, ref: string): Promise<OrganizationRow> {
    const { column, value } = idOrKey(ref);
    const row = await db
      .selectFrom("organizations")
      .selectAll()
      .where("id", "=", principal.organizationId)
      .where(column, "=", value)
      .executeTakeFirst();
    if (!row) throw notFound("organization", ref);
    return row;
  }

  return {
    /** The organizations the key can reach: its own, when it matches the search. */
    async list(
      principal: Principal,
      search: string | undefined,
      page: PageRequest,
    ): Promise<OrganizationRead[]> {
      const own = organizationRead(await ownRow(principal.organizationId));
      const needle = search?.toLowerCase();
      const matches =
        needle === undefined ||
        own.id === needle ||
        own.key.toLowerCase().includes(needle) ||
        own.name.toLowerCase().includes(needle);
      return (matches ? [own] : []).slice(offsetOf(page), offsetOf(page) + page.perPage);
    },

    async active(principal: Principal): Promise<OrganizationRead> {
      return organizationRead(await own(principal, principal.organizationId));
    },

    async get(principal: Principal, ref: string): Promise<OrganizationRead> {
      return organizationRead(await own(principal, ref));
    },

    async update(principal: Principal, ref: string, input: OrganizationUpdate): Promise<OrganizationRead> {
      const current = await own(principal, ref);
      const row = await db
        .updateTable("organizations")
        .set({
          ...(input.name !== undefined && { name: input.name }),
          ...(input.settings !== undefined && { settings: toJson(input.settings) }),
          updated_at: now(),
        })
        .where("id", "=", current.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      if (input.settings !== undefined) deps.onSettingsChanged?.(row.id);
      return organizationRead(row);
    },

    async create(principal: Principal, input: OrganizationCreate) {
      const created = await createOrganizationRecords(db, box, input);
      return {
        ...organizationRead(created.organization),
        api_key_id: created.adminKeyId,
        api_key_secret: created.adminKeySecret,
      };
    },
  };
}

export type OrganizationsService = ReturnType<typeof createOrganizationsService>;
