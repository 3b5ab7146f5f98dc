import type { Selectable } from "kysely";
import type { Db } from "../db/db.ts";
import type { OrgLoginSettingsTable } from "../db/types.ts";

/**
 * An organization's login settings (issue 43): its OpenID Connect provider, whether password logins need a second
 * factor, whether only single sign-on may log in (but for the break-glass admin). Written by the login-settings
 * module; read by logins, the SSO flow and, through `sessionPrincipal`, every session call.
 */
export type LoginSettingsRow = Selectable<OrgLoginSettingsTable>;

export const findLoginSettings = (db: Db, organizationId: string): Promise<LoginSettingsRow | undefined> =>
  db
    .selectFrom("org_login_settings")
    .selectAll()
    .where("organization_id", "=", organizationId)
    .executeTakeFirst();

export async function putLoginSettings(db: Db, row: LoginSettingsRow): Promise<void> {
  const { organization_id: _, ...changes } = row;
  await db
    .insertInto("org_login_settings")
    .values(row)
    .onConflict((oc) => oc.column("organization_id").doUpdateSet(changes))
    .execute();
}

export const allowedDomainsOf = (row: Pick<LoginSettingsRow, "sso_allowed_domains">): string[] =>
  row.sso_allowed_domains ? (JSON.parse(row.sso_allowed_domains) as string[]) : [];

/** Whether a password may act in the organization for this member: not where SSO is required, but for break-glass. */
export const passwordRefused = (
  settings: Pick<LoginSettingsRow, "require_sso" | "break_glass_member_id"> | undefined | null,
  memberId: string,
): boolean => !!settings && settings.require_sso === 1 && settings.break_glass_member_id !== memberId;

/** The member's organizations that refuse its password (they require SSO and it is not their break-glass admin). */
export async function ssoOnlyOrganizationsOf(
  db: Db,
  memberId: string,
): Promise<{ key: string; provider: string | null }[]> {
  const rows = await db
    .selectFrom("member_grants as g")
    .innerJoin("org_login_settings as s", "s.organization_id", "g.organization_id")
    .innerJoin("organizations as o", "o.id", "g.organization_id")
    .select(["o.key", "s.sso_provider_name", "s.require_sso", "s.break_glass_member_id"])
    .where("g.member_id", "=", memberId)
    .where("s.require_sso", "=", 1)
    .distinct()
    .execute();
  return rows
    .filter((r) => passwordRefused(r, memberId))
    .map((r) => ({ key: r.key, provider: r.sso_provider_name }));
}

/** Organizations with an OpenID provider, for the login page's "Sign in with …" buttons. */
export const listSsoOrganizations = (db: Db) =>
  db
    .selectFrom("org_login_settings as s")
    .innerJoin("organizations as o", "o.id", "s.organization_id")
    .select(["o.key", "o.name", "s.sso_provider_name"])
    .where("s.sso_issuer", "is not", null)
    .orderBy("o.key")
    .limit(100)
    .execute();
