import { createHash, timingSafeEqual } from "node:crypto";
import { AppError, ERROR_CODES, invalid, type ErrorCode } from "../../lib/errors.ts";
import { bearerToken } from "../../lib/access.ts";
import { listRegions, urlOf, wrongRegion, type Regions } from "../../lib/regions.ts";
import type { OrganizationCreate, OrganizationReadWithAPIKey } from "./organizations.schemas.ts";
import type { Static } from "typebox";

/** Where one deployment asks another to create an organization; outside /v2, not part of the public API. */
export const INTER_REGION_PATH = "/internal/regions/orgs";

type Settings = Regions & { regionSecret: string | undefined };

/**
 * Creates an organization in another region: that region's deployment does it (its database holds the
 * organization, nothing is stored here) and answers as `POST /v2/orgs` does, with the new admin key.
 */
export async function createInRegion(
  config: Settings,
  region: string,
  input: Omit<OrganizationCreate, "region">,
): Promise<Static<typeof OrganizationReadWithAPIKey>> {
  const url = region === config.region ? undefined : urlOf(config, region);
  if (url === undefined) {
    const known = listRegions(config).map((r) => r.region);
    throw invalid(`region '${region}' is not one of this deployment's regions (${known.join(", ")})`, [
      "body",
      "region",
    ]);
  }
  if (config.regionSecret === undefined) throw wrongRegion(region, config, "an organization of that region");
  let res: Response;
  try {
    res = await fetch(url + INTER_REGION_PATH, {
      method: "POST",
      headers: { authorization: `Bearer ${config.regionSecret}`, "content-type": "application/json" },
      body: JSON.stringify(input),
      signal: AbortSignal.timeout(10_000),
    });
  } catch {
    throw new AppError(
      "SERVICE_UNAVAILABLE",
      `the deployment of region '${region}' (${url}) cannot be reached`,
    );
  }
  const body = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  if (res.ok && body) return body as Static<typeof OrganizationReadWithAPIKey>;
  // The caller's mistakes (a duplicate key, an invalid name) are told as that region told them.
  const code = body?.["error_code"] as ErrorCode | undefined;
  if ((res.status === 409 || res.status === 422) && code !== undefined && code in ERROR_CODES)
    throw new AppError(code, String(body?.["message"] ?? ""));
  throw new AppError(
    "SERVICE_UNAVAILABLE",
    `the deployment of region '${region}' did not create the organization (${res.status}); its region secret may differ`,
  );
}

const digest = (text: string) => createHash("sha256").update(text).digest();

/** Whether a call to the inter-region route carries this deployment's region secret. */
export function isRegionPeer(authorization: string | undefined, regionSecret: string | undefined): boolean {
  const given = bearerToken(authorization);
  return (
    regionSecret !== undefined && given !== undefined && timingSafeEqual(digest(given), digest(regionSecret))
  );
}
