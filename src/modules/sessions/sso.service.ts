import * as oidc from "openid-client";
import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import { AppError, notFound } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { hashSecret } from "../../lib/secrets.ts";
import { now, toTimestamp } from "../../lib/time.ts";
import type { AccessLevel } from "../../lib/access.ts";
import {
  allowedDomainsOf,
  findLoginSettings,
  listSsoOrganizations,
  type LoginSettingsRow,
} from "../../domain/login-settings-records.ts";
import {
  findMemberByEmail,
  grantsOf,
  insertMemberWithGrant,
  orgAdminGrant,
  putGrant,
  type MemberRow,
} from "../../domain/member-records.ts";
import type { SessionLifetime } from "../../domain/session-records.ts";
import { refusal, type OidcClients } from "./oidc-client.ts";
import { createSessionOpener, type Opened } from "./session-opener.ts";

type Db = Kysely<Database>;
type Claims = Record<string, unknown> & { sub: string };

/** How long a sign-in may take at the provider. */
const SIGN_IN_MS = 10 * 60_000;
const failedSso = (message: string) => new AppError("SSO_FAILED", message);

/** Only a path of the dashboard: a sign-in must not send anyone elsewhere afterwards. */
export const safeNext = (next: string | undefined): string | null =>
  next?.startsWith("/") && !next.startsWith("//") && !next.startsWith("/\\") ? next.slice(0, 512) : null;

/**
 * Single sign-on with an organization's OpenID provider: the authorization code flow with PKCE. The state, nonce
 * and code verifier stay here (the browser holds the state in a cookie too, so a callback from another browser is
 * refused) and a sign-in is used once; openid-client checks the ID token (signature by the provider's JWKS,
 * issuer, audience, nonce, expiry). Members are created or given a grant on their first sign-in when their
 * verified e-mail's domain is allowed.
 */
export function createSsoService(deps: {
  db: Db;
  clients: OidcClients;
  lifetime: SessionLifetime;
  redirectUri: string;
}) {
  const { db, clients } = deps;
  const { open } = createSessionOpener(db, deps.lifetime);

  async function settingsOfKey(orgKey: string): Promise<LoginSettingsRow & { sso_issuer: string }> {
    const org = await db
      .selectFrom("organizations")
      .select("id")
      .where("key", "=", orgKey)
      .executeTakeFirst();
    const settings = org && (await findLoginSettings(db, org.id));
    if (!settings?.sso_issuer) throw notFound("single sign-on of organization", orgKey);
    return settings as LoginSettingsRow & { sso_issuer: string };
  }

  /** The sign-in row of this state, marked used: unknown, used (a replay) or expired ones are refused. */
  async function claimSignIn(state: string) {
    const row = await db
      .selectFrom("sso_logins")
      .selectAll()
      .where("state_hash", "=", hashSecret(state))
      .executeTakeFirst();
    if (!row) throw failedSso("unknown sign-in: start again from the login page");
    const claimed = await db
      .updateTable("sso_logins")
      .set({ used_at: now() })
      .where("id", "=", row.id)
      .where("used_at", "is", null)
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1)
      throw failedSso("this sign-in was already used: start again from the login page");
    if (row.expires_at <= now()) throw failedSso("this sign-in has expired: start again from the login page");
    return row;
  }

  /** The member of a verified, allowed e-mail: created, or given a grant in the organization, the first time. */
  async function provision(settings: LoginSettingsRow, claims: Claims): Promise<MemberRow> {
    const email = typeof claims["email"] === "string" ? claims["email"].toLowerCase() : undefined;
    if (!email) throw failedSso("the identity provider sent no e-mail (ask for the `email` scope)");
    if (claims["email_verified"] !== true)
      throw failedSso(`the identity provider has not verified the e-mail ${email}`);
    const domain = email.slice(email.lastIndexOf("@") + 1);
    if (!allowedDomainsOf(settings).includes(domain))
      throw failedSso(`the e-mail domain ${domain} is not allowed to sign in to this organization`);
    const grant = orgAdminGrant(
      settings.organization_id,
      (settings.sso_new_member_access ?? "read") as AccessLevel,
    );
    const name = (claim: string) =>
      typeof claims[claim] === "string" ? String(claims[claim]).slice(0, 255) : undefined;
    return db.transaction().execute(async (trx) => {
      const existing = await findMemberByEmail(trx, email);
      if (!existing)
        return insertMemberWithGrant(
          trx,
          { email, passwordHash: null, firstName: name("given_name"), lastName: name("family_name") },
          grant,
        );
      if ((await grantsOf(trx, existing.id, settings.organization_id)).length === 0)
        await putGrant(trx, existing.id, grant);
      return existing;
    });
  }

  return {
    /** Organizations with single sign-on, for the login page. */
    async providers() {
      const rows = await listSsoOrganizations(db);
      return rows.map((r) => ({
        organization_key: r.key,
        provider_name: r.sso_provider_name ?? r.name,
        login_url: `/v2/auth/sso/${encodeURIComponent(r.key)}/login`,
      }));
    },

    /** Starts a sign-in: the provider's authorization URL, and the state for the browser's cookie. */
    async start(orgKey: string, next: string | undefined): Promise<{ url: string; state: string }> {
      const settings = await settingsOfKey(orgKey);
      const config = await clients.configurationOf(settings);
      const state = oidc.randomState();
      const nonce = oidc.randomNonce();
      const verifier = oidc.randomPKCECodeVerifier();
      const at = Date.now();
      await db
        .deleteFrom("sso_logins")
        .where("expires_at", "<=", toTimestamp(new Date(at)))
        .execute();
      await db
        .insertInto("sso_logins")
        .values({
          id: newId(),
          state_hash: hashSecret(state),
          organization_id: settings.organization_id,
          nonce,
          code_verifier: verifier,
          next_path: safeNext(next),
          created_at: toTimestamp(new Date(at)),
          expires_at: toTimestamp(new Date(at + SIGN_IN_MS)),
          used_at: null,
        })
        .execute();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: deps.redirectUri,
        scope: "openid email profile",
        response_type: "code",
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        state,
        nonce,
      });
      return { url: url.href, state };
    },

    /** The provider's redirect back: checks everything, then opens an SSO session in the organization. */
    async callback(
      query: Record<string, string | undefined>,
      browserState: string | undefined,
      ip: string,
    ): Promise<Opened & { next: string }> {
      const state = query["state"];
      if (!state) throw failedSso("the answer has no state: start again from the login page");
      if (browserState !== state)
        throw failedSso("this sign-in was not started in this browser (or took too long): start again");
      const signIn = await claimSignIn(state);
      const settings = await findLoginSettings(db, signIn.organization_id);
      if (!settings?.sso_issuer) throw failedSso("the organization no longer has single sign-on");
      const config = await clients.configurationOf(settings);
      const current = new URL(deps.redirectUri);
      for (const [name, value] of Object.entries(query))
        if (value !== undefined) current.searchParams.set(name, value);
      let claims: Claims;
      try {
        const tokens = await oidc.authorizationCodeGrant(config, current, {
          pkceCodeVerifier: signIn.code_verifier,
          expectedState: state,
          expectedNonce: signIn.nonce,
          idTokenExpected: true,
        });
        const idToken = tokens.claims();
        if (!idToken) throw failedSso("the identity provider sent no ID token");
        // Providers that keep the e-mail out of the ID token give it at the userinfo endpoint, for the same subject.
        claims =
          typeof idToken["email"] === "string"
            ? idToken
            : { ...(await oidc.fetchUserInfo(config, tokens.access_token, idToken.sub)), sub: idToken.sub };
      } catch (e) {
        throw refusal(e, settings.sso_issuer);
      }
      const member = await provision(settings, claims);
      const opened = await open(member, ip, settings.organization_id, "sso");
      return { ...opened, next: signIn.next_path ?? "/" };
    },
  };
}
