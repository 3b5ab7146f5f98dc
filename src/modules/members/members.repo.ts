import type { Selectable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { InvitesTable } from "../../db/types.ts";
import type { Permission } from "./members.schemas.ts";
import type { AccessLevel } from "../../lib/access.ts";

export type InviteRow = Selectable<InvitesTable>;

/** The grants of some members in one organization, in Permission's shape (with keys and names). */
export async function permissionsOf(
  db: Db,
  organizationId: string,
  memberIds: string[],
): Promise<Map<string, Permission[]>> {
  const out = new Map<string, Permission[]>(memberIds.map((id) => [id, []]));
  if (memberIds.length === 0) return out;
  const rows = await db
    .selectFrom("member_grants as g")
    .innerJoin("organizations as o", "o.id", "g.organization_id")
    .leftJoin("projects as p", "p.id", "g.project_id")
    .leftJoin("environments as e", "e.id", "g.environment_id")
    .select([
      "g.member_id",
      "g.organization_id",
      "g.project_id",
      "g.environment_id",
      "g.object_type",
      "g.access_level",
      "o.key as organization_key",
      "o.name as organization_name",
      "p.key as project_key",
      "p.name as project_name",
      "e.key as environment_key",
      "e.name as environment_name",
    ])
    .where("g.organization_id", "=", organizationId)
    .where("g.member_id", "in", memberIds)
    .orderBy("g.created_at")
    .orderBy("g.id")
    .execute();
  for (const r of rows) {
    out.get(r.member_id)?.push({
      organization_id: r.organization_id,
      object_type: r.object_type as Permission["object_type"],
      access_level: r.access_level as AccessLevel,
      organization_key: r.organization_key,
      organization_name: r.organization_name,
      ...(r.project_id !== null && { project_id: r.project_id }),
      ...(r.project_key !== null && { project_key: r.project_key }),
      ...(r.project_name !== null && { project_name: r.project_name }),
      ...(r.environment_id !== null && { environment_id: r.environment_id }),
      ...(r.environment_key !== null && { environment_key: r.environment_key }),
      ...(r.environment_name !== null && { environment_name: r.environment_name }),
    });
  }
  return out;
}

/** Members with a grant in the organization (on the project or environment when given), by e-mail. */
export async function listMemberIds(
  db: Db,
  organizationId: string,
  filter: { projectId?: string | undefined; environmentId?: string | undefined },
  offset: number,
  limit: number,
): Promise<string[]> {
  let q = db
    .selectFrom("member_grants as g")
    .innerJoin("members as m", "m.id", "g.member_id")
    .where("g.organization_id", "=", organizationId);
  if (filter.projectId) q = q.where("g.project_id", "=", filter.projectId);
  if (filter.environmentId) q = q.where("g.environment_id", "=", filter.environmentId);
  const rows = await q
    .select(["m.id", "m.email"])
    .distinct()
    .orderBy("m.email")
    .offset(offset)
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

export const hasGrantIn = async (db: Db, memberId: string, organizationId: string): Promise<boolean> =>
  (await db
    .selectFrom("member_grants")
    .select("id")
    .where("member_id", "=", memberId)
    .where("organization_id", "=", organizationId)
    .limit(1)
    .executeTakeFirst()) !== undefined;

export const deleteMemberGrantsIn = (db: Db, memberId: string, organizationId: string) =>
  db
    .deleteFrom("member_grants")
    .where("member_id", "=", memberId)
    .where("organization_id", "=", organizationId)
    .execute();

export const deleteMember = (db: Db, memberId: string) =>
  db.deleteFrom("members").where("id", "=", memberId).execute();

export const insertInvite = (db: Db, row: InviteRow) => db.insertInto("invites").values(row).execute();

export const listInvites = (db: Db, organizationId: string, offset: number, limit: number) =>
  db
    .selectFrom("invites")
    .selectAll()
    .where("organization_id", "=", organizationId)
    .orderBy("created_at")
    .orderBy("id")
    .offset(offset)
    .limit(limit)
    .execute();

export const findInviteByCodeHash = (db: Db, codeHash: string): Promise<InviteRow | undefined> =>
  db.selectFrom("invites").selectAll().where("code_hash", "=", codeHash).executeTakeFirst();

/** Deletes an invite of the organization; the row it was, or undefined when there was none. */
export const deleteInvite = (db: Db, organizationId: string, id: string) =>
  db
    .deleteFrom("invites")
    .where("organization_id", "=", organizationId)
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();

/** Marks a pending invite used; false when another request used it first (an invite works once). */
export async function markInviteUsed(db: Db, id: string, memberId: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable("invites")
    .set({ status: "accepted", used_at: at, member_id: memberId })
    .where("id", "=", id)
    .where("used_at", "is", null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
