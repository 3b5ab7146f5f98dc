import { AppError } from "./errors.ts";
import { regionOfSecret } from "./secrets.ts";

/** The region a deployment serves and the regions' public base URLs (see `GATEHOUSE_REGION(S)` in config.ts). */
export interface Regions {
  region: string;
  regionUrls: Record<string, string>;
  publicUrl: string;
}

/** A region's public base URL; this deployment's is its public URL unless the list names another. */
export const urlOf = (regions: Regions, region: string): string | undefined =>
  regions.regionUrls[region] ?? (region === regions.region ? regions.publicUrl : undefined);

/** Every region, this one first, with its public base URL. */
export const listRegions = (regions: Regions): { region: string; api_url: string }[] =>
  [regions.region, ...Object.keys(regions.regionUrls)]
    .filter((region, i, all) => all.indexOf(region) === i)
    .map((region) => ({ region, api_url: urlOf(regions, region) as string }));

/** This deployment's region and its public base URL, as organizations show them. */
export const home = (regions: Regions) => ({
  region: regions.region,
  api_url: urlOf(regions, regions.region) as string,
});

/** 421 naming where a region (one of `regionUrls`) is served. */
export function wrongRegion(region: string, regions: Regions, what: string): AppError {
  const url = urlOf(regions, region) as string;
  return new AppError(
    "WRONG_REGION",
    `${what} belongs to region '${region}', served at ${url}; this deployment serves region '${regions.region}'`,
    { region, api_url: url },
  );
}

/**
 * A key of another region, told from its secret alone: no lookup of anything, so a call sent to the wrong base
 * URL costs nothing here and reveals nothing of the other region.
 */
export function misdirectedKey(secret: string, regions: Regions): AppError | undefined {
  const region = regionOfSecret(secret, regions.regionUrls);
  return region === undefined || region === regions.region
    ? undefined
    : wrongRegion(region, regions, "the API key");
}
