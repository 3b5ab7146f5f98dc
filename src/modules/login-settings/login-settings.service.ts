import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import { ownOrganizationId } from "../../domain/organization-records.ts";
import type { Principal } from "../../lib/access.ts";
import { invalid } from "../../lib/errors.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import { now } from "../../lib/time.ts";
import {
  allowedDomainsOf,
  findLoginSettings,
  putLoginSettings,
  type LoginSettingsRow,
} from "../../domain/login-settings-records.ts";
import { findMemberByEmail, findMemberById, grantsOf } from "../../domain/member-records.ts";
import { assertIssuerAllowed, ssoRedirectUri } from "../../lib/oidc-issuer.ts";
import type { LoginSettingsRead, LoginSettingsWrite, SsoSettingsWrite } from "./login-settings.schemas.ts";

type Db = Kysely<Database>;

/** An organization's SSO and second-factor policy, managed by its admins. */
export function createLoginSettingsService(deps: { db: Db; box: SecretBox; publicUrl: string }) {
  const { db, box } = deps;

  /** The organization a path names, which must be the caller's. */
  const ownOrganization = (principal: Principal, ref: string) => ownOrganizationId(db, principal, ref);

  async function read(row: LoginSettingsRow | undefined): Promise<LoginSettingsRead> {
    if (!row?.sso_issuer) return { require_two_factor: row?.require_two_factor === 1, sso: null };
    const breakGlass = row.break_glass_member_id
      ? await findMemberById(db, row.break_glass_member_id)
      : undefined;
    return {
      require_two_factor: row.require_two_factor === 1,
      sso: {
        provider_name: row.sso_provider_name ?? "",
        issuer: row.sso_issuer,
        client_id: row.sso_client_id ?? "",
        allowed_domains: allowedDomainsOf(row),
        new_member_access: (row.sso_new_member_access ?? "read") as "read",
        require_sso: row.require_sso === 1,
        break_glass_email: breakGlass?.email ?? null,
        redirect_uri: ssoRedirectUri(deps.publicUrl),
      },
    };
  }

  /** The break-glass admin: a member holding the organization-level admin grant. */
  async function breakGlassOf(organizationId: string, sso: SsoSettingsWrite): Promise<string | null> {
    const loc = ["body", "sso", "break_glass_email"];
    if (!sso.break_glass_email) {
      if (sso.require_sso) throw invalid("require_sso needs a break-glass admin (break_glass_email)", loc);
      return null;
    }
    const member = await findMemberByEmail(db, sso.break_glass_email);
    const grants = member ? await grantsOf(db, member.id, organizationId) : [];
    if (!member || !grants.some((g) => g.level === "org" && g.access === "admin"))
      throw invalid("the break-glass admin must be an organization admin of this organization", loc);
    return member.id;
  }

  async function ssoColumns(organizationId: string, sso: SsoSettingsWrite, existing?: LoginSettingsRow) {
    assertIssuerAllowed(sso.issuer, ["body", "sso", "issuer"]);
    const sameClient = existing?.sso_issuer === sso.issuer && existing.sso_client_id === sso.client_id;
    const sealed =
      sso.client_secret !== undefined ? box.seal(sso.client_secret) : existing?.sso_client_secret_sealed;
    if (!sealed || (sso.client_secret === undefined && !sameClient))
      throw invalid("give the client_secret of this client", ["body", "sso", "client_secret"]);
    return {
      require_sso: sso.require_sso ? 1 : 0,
      sso_provider_name: sso.provider_name,
      sso_issuer: sso.issuer.replace(/\/+$/, ""),
      sso_client_id: sso.client_id,
      sso_client_secret_sealed: sealed,
      sso_allowed_domains: JSON.stringify([...new Set(sso.allowed_domains.map((d) => d.toLowerCase()))]),
      sso_new_member_access: sso.new_member_access,
      break_glass_member_id: await breakGlassOf(organizationId, sso),
    };
  }

  const NO_SSO = {
    require_sso: 0,
    sso_provider_name: null,
    sso_issuer: null,
    sso_client_id: null,
    sso_client_secret_sealed: null,
    sso_allowed_domains: null,
    sso_new_member_access: null,
    break_glass_member_id: null,
  };

  return {
    async get(principal: Principal, orgRef: string): Promise<LoginSettingsRead> {
      return read(await findLoginSettings(db, await ownOrganization(principal, orgRef)));
    },

    /** Replaces the settings; a missing client_secret keeps the stored one of the same issuer and client. */
    async put(principal: Principal, orgRef: string, body: LoginSettingsWrite): Promise<LoginSettingsRead> {
      const organizationId = await ownOrganization(principal, orgRef);
      const existing = await findLoginSettings(db, organizationId);
      const row: LoginSettingsRow = {
        organization_id: organizationId,
        require_two_factor: body.require_two_factor ? 1 : 0,
        ...(body.sso ? await ssoColumns(organizationId, body.sso, existing) : NO_SSO),
        updated_at: now(),
      };
      await putLoginSettings(db, row);
      return read(row);
    },
  };
}
