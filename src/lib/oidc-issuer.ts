import { invalid } from "./errors.ts";

const LOOPBACK = new Set(["127.0.0.1", "[::1]", "localhost"]);

/** An issuer on this machine (a provider started by a test, or a local one): the only place http is accepted. */
export function isLoopbackHttp(issuer: URL): boolean {
  return issuer.protocol === "http:" && LOOPBACK.has(issuer.hostname);
}

/** OpenID issuers must be https (the ID token's keys come from there), but for loopback addresses. */
export function assertIssuerAllowed(issuer: string, loc: (string | number)[]): void {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw invalid("the issuer must be a URL", loc);
  }
  if (url.protocol !== "https:" && !isLoopbackHttp(url))
    throw invalid("the issuer must be an https URL (http only on a loopback address, for tests)", loc);
  if (url.search || url.hash) throw invalid("the issuer must have no query or fragment", loc);
}

/** The callback every provider redirects to (register it with the provider). */
export const ssoRedirectUri = (publicUrl: string): string => `${publicUrl}/v2/auth/sso/callback`;
