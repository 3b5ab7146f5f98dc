import * as oidc from "openid-client";
import { AppError } from "../../lib/errors.ts";
import { isLoopbackHttp } from "../../lib/oidc-issuer.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import type { LoginSettingsRow } from "../../domain/login-settings-records.ts";

/** A provider's discovery document is read again after this long (its keys are fetched by openid-client as needed). */
const DISCOVERY_TTL_MS = 10 * 60_000;
const TIMEOUT_SECONDS = 10;

/** Whether a failure is the provider being unreachable (503) rather than an answer that was refused. */
function isNetworkError(e: unknown): boolean {
  for (let cause = e; cause instanceof Error; cause = cause.cause) {
    if (cause.name === "TimeoutError" || cause.name === "AbortError") return true;
    if (cause instanceof TypeError && /fetch failed/i.test(cause.message)) return true;
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && /^(ECONN|ENOTFOUND|ETIMEDOUT|EAI_AGAIN|UND_ERR)/.test(code)) return true;
  }
  return false;
}

export const unreachable = (issuer: string) =>
  new AppError(
    "SERVICE_UNAVAILABLE",
    `the identity provider ${issuer} could not be reached; try again shortly`,
  );

/** Refusals of the provider's answer: the library's reason (it names the check, never the token). */
export function refusal(e: unknown, issuer: string): AppError {
  if (e instanceof AppError) return e;
  if (isNetworkError(e)) return unreachable(issuer);
  // openid-client wraps the check that failed (oauth4webapi's error, which names the claim): say that one.
  let message = e instanceof Error ? e.message : String(e);
  for (let cause = e; cause instanceof Error; cause = cause.cause) message = cause.message;
  const error = (e as { error?: unknown }).error;
  const reason = typeof error === "string" ? `the provider answered ${error}` : message;
  return new AppError("SSO_FAILED", `single sign-on was refused: ${reason}`);
}

/**
 * openid-client configurations, one per organization's issuer and client, from the provider's discovery document
 * (`/.well-known/openid-configuration`), kept for ten minutes. http is allowed for loopback issuers only. ID
 * token signatures are verified with the provider's JWKS (non-repudiation checks).
 */
export function createOidcClients(box: SecretBox) {
  const cache = new Map<string, { at: number; config: Promise<oidc.Configuration> }>();

  return {
    async configurationOf(settings: LoginSettingsRow): Promise<oidc.Configuration> {
      const issuer = settings.sso_issuer ?? "";
      const key = [issuer, settings.sso_client_id, settings.sso_client_secret_sealed].join("\n");
      const hit = cache.get(key);
      if (hit && Date.now() - hit.at < DISCOVERY_TTL_MS) return hit.config;
      const secret = box.open(settings.sso_client_secret_sealed ?? "");
      if (!secret)
        throw new AppError(
          "SSO_FAILED",
          "the organization's client secret cannot be read: an admin must set it again",
        );
      const url = new URL(issuer);
      const config = oidc.discovery(
        url,
        settings.sso_client_id ?? "",
        undefined,
        oidc.ClientSecretBasic(secret),
        {
          // The ID token's signature is checked against the provider's JWKS too, not only trusted for coming over TLS
          // from the token endpoint (openid-client's default).
          execute: [
            oidc.enableNonRepudiationChecks,
            ...(isLoopbackHttp(url) ? [oidc.allowInsecureRequests] : []),
          ],
          timeout: TIMEOUT_SECONDS,
        },
      );
      cache.set(key, { at: Date.now(), config });
      try {
        return await config;
      } catch (e) {
        cache.delete(key);
        throw isNetworkError(e)
          ? unreachable(issuer)
          : new AppError(
              "SERVICE_UNAVAILABLE",
              `the identity provider ${issuer} gave no usable discovery document: ${e instanceof Error ? e.message : String(e)}`,
            );
      }
    },
  };
}
export type OidcClients = ReturnType<typeof createOidcClients>;
