import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";

import { type Principal } from "../../lib/access.ts";
import { notFound } from "../../lib/errors.ts";
import { idOrKey } from "../../lib/ids.ts";
import { toJson } from "../../lib/json.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import { now } from "../../lib/time.ts";
import { offsetOf, type PageRequest } from "../../lib/pagination.ts";
import { memberOrganizationIds } from "../../domain/member-records.ts";

import type { OrganizationCreate, OrganizationRead, OrganizationUpdate } from "./organizations.schemas.ts";
import { home, type Regions } from "../../lib/regions.ts";
import { createInRegion } from "./other-regions.ts";
import {
  createOrganizationRecords,
  organizationRead,
  type OrganizationRow,
} from "../../domain/organization-records.ts";

export function createOrganizationsService(deps: {
  db: Kysely<Database>;
  box: SecretBox;
  config: Regions & { regionSecret: string | undefined };
  /** Told after an organization's settings change (the rate limiter drops its cached limit). */
  onSettingsChanged?: (organizationId: string) => void;
}) {
  const { db, box, config } = deps;
  const read = (row: OrganizationRow) => organizationRead(row, home(config));

  async function createHere(input: Omit<OrganizationCreate, "region">) {
    const created = await createOrganizationRecords(db, box, input);
    return {
      ...read(created.organization),
      api_key_id: created.adminKeyId,
      api_key_secret: created.adminKeySecret,
    };
  }

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
    /**
     * The organizations the caller can reach, when they match the search: a key's own; a member's, every one it
     * holds a grant in.
     */
    async list(
      principal: Principal,
      search: string | undefined,
      page: PageRequest,
    ): Promise<OrganizationRead[]> {
      const ids = principal.member
        ? await memberOrganizationIds(db, principal.member.id)
        : [principal.organizationId];
      const reachable = await Promise.all(ids.map(async (id) => read(await ownRow(id))));
      const needle = search?.toLowerCase();
      const matches = (org: OrganizationRead) =>
        needle === undefined ||
        org.id === needle ||
        org.key.toLowerCase().includes(needle) ||
        org.name.toLowerCase().includes(needle);
      return reachable.filter(matches).slice(offsetOf(page), offsetOf(page) + page.perPage);
    },

    async active(principal: Principal): Promise<OrganizationRead> {
      return read(await own(principal, principal.organizationId));
    },

    async get(principal: Principal, ref: string): Promise<OrganizationRead> {
      return read(await own(principal, ref));
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
      return read(row);
    },

    /** In this deployment's region, or created by the deployment of the region the input names. */
    async create(input: OrganizationCreate) {
      const { region = config.region, ...fields } = input;
      if (region !== config.region) return createInRegion(config, region, fields);
      return createHere(fields);
    },

    createHere,
  };
}

export type OrganizationsService = ReturnType<typeof createOrganizationsService>;
