import { AppError } from "../../lib/errors.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import type { Store } from "../../db/store.ts";
import type { PdpSlot } from "../../pdp/embedded.ts";
import type { PdpTarget } from "../../pdp/http/decide.ts";
import { checkBulk, checkOne, userPermissionsOf } from "../../pdp/http/server.ts";
import type { Decision } from "../../pdp/engine/types.ts";
import { describeReason } from "../audit-logs/audit-logs.service.ts";

type PermitResult = ReturnType<typeof checkOne>;

/** The PDP's answer with its reason and revision at the top and the reason in words. */
const explained = (r: PermitResult) => ({
  ...r,
  reason: r.debug.reason,
  explanation: describeReason(r.debug.reason as Decision["reason"]) ?? "",
  revision: r.debug.revision,
});

/**
 * Checks asked of the control plane (a session or an API key with read access): decided by the embedded PDP's
 * copy of the environment, as its own routes decide them, and logged to the decision log the same way.
 */
export function createChecksService(deps: { store: Store; pdpSlot: PdpSlot }) {
  async function targetOf({ environment }: EnvScope) {
    const pdp = deps.pdpSlot.current;
    if (!pdp)
      throw new AppError("SERVICE_UNAVAILABLE", "the embedded PDP is off (--pdp-port 0): no checks here");
    const target: PdpTarget = await pdp.environmentTarget({
      organizationId: environment.organization_id,
      projectId: environment.project_id,
      environmentId: environment.id,
    });
    return { pdp, target };
  }

  return {
    async check(scope: EnvScope, body: unknown) {
      const { pdp, target } = await targetOf(scope);
      return explained(checkOne(pdp, target, body));
    },

    async bulk(scope: EnvScope, body: unknown) {
      const { pdp, target } = await targetOf(scope);
      return { allow: checkBulk(pdp, target, body).allow.map(explained) };
    },

    async userPermissions(scope: EnvScope, body: unknown) {
      const { pdp, target } = await targetOf(scope);
      return { permissions: userPermissionsOf(pdp, target, body), revision: target.replica.revision };
    },

    async status(scope: EnvScope) {
      const { pdp, target } = await targetOf(scope);
      const head = await deps.store.db
        .selectFrom("environments")
        .select("revision")
        .where("id", "=", scope.environment.id)
        .executeTakeFirst();
      const environmentRevision = Number(head?.revision ?? 0);
      const held = target.replica.revision;
      return {
        environment_revision: environmentRevision,
        pdp_id: pdp.pdpId,
        pdp_revision: held,
        revisions_behind: Math.max(0, environmentRevision - held),
        lag_ms: Math.max(0, Date.now() - target.replica.lastSyncAt),
      };
    },
  };
}
