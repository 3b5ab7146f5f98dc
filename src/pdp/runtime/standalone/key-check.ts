import { timingSafeEqual } from "node:crypto";
import { AppError } from "../../../lib/errors.ts";
import { ControlPlaneError, type ControlPlane, type Scope } from "./control-plane.ts";

/** A key the control plane said covers the environment is taken without asking again for this long. */
const KEY_CACHE_MS = 60_000;

/** The environment a standalone PDP serves (throws while it has none). */
type Served = () => { organizationId: string; projectId: string; environmentId: string };

/**
 * Whether a key covers this PDP's environment: its own key at once, any other as the control plane scopes it
 * (remembered for a minute).
 */
export function keyCheck(
  cp: ControlPlane,
  apiKey: string,
  target: Served,
): (key: string) => boolean | Promise<boolean> {
  const keyCache = new Map<string, number>();
  const ownKey = Buffer.from(apiKey);
  return (key) => {
    const given = Buffer.from(key);
    if (given.length === ownKey.length && timingSafeEqual(given, ownKey)) return true;
    const cached = keyCache.get(key);
    if (cached !== undefined && cached > Date.now()) return true;
    return askControlPlane(key);
  };

  async function askControlPlane(key: string): Promise<boolean> {
    let scope: Scope;
    try {
      scope = await cp.get<Scope>("/v2/api-key/scope", key, 5000);
    } catch (error) {
      if (error instanceof ControlPlaneError && error.status === 401) return false;
      if (error instanceof ControlPlaneError && error.misdirected) throw error.misdirected;
      throw new AppError(
        "SERVICE_UNAVAILABLE",
        "the control plane cannot be reached to verify this key; use the PDP's own key",
      );
    }
    const t = target();
    const covers =
      scope.organization_id === t.organizationId &&
      (scope.project_id === undefined || scope.project_id === t.projectId) &&
      (scope.environment_id === undefined || scope.environment_id === t.environmentId);
    if (covers) keyCache.set(key, Date.now() + KEY_CACHE_MS);
    return covers;
  }
}
