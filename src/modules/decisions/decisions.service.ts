import { AppError } from "../../lib/errors.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import type { Store } from "../../db/store.ts";
import type { DecidedEnvironment, DecisionPort, PdpSlot } from "../../pdp/decision-port.ts";

/**
 * Checks asked of the control plane (a session or an API key with read access): decided by the embedded PDP's
 * copy of the environment, as its own routes decide them, and logged to the decision log the same way.
 */
export function createDecisionsService(deps: { store: Store; pdpSlot: PdpSlot }) {
  function pdpOf({ environment }: EnvScope): { pdp: DecisionPort; env: DecidedEnvironment } {
    const pdp = deps.pdpSlot.current;
    if (!pdp)
      throw new AppError("SERVICE_UNAVAILABLE", "the embedded PDP is off (--pdp-port 0): no checks here");
    return {
      pdp,
      env: {
        organizationId: environment.organization_id,
        projectId: environment.project_id,
        environmentId: environment.id,
      },
    };
  }

  return {
    check(scope: EnvScope, body: unknown) {
      const { pdp, env } = pdpOf(scope);
      return pdp.check(env, body);
    },

    bulk(scope: EnvScope, body: unknown) {
      const { pdp, env } = pdpOf(scope);
      return pdp.bulk(env, body);
    },

    userPermissions(scope: EnvScope, body: unknown) {
      const { pdp, env } = pdpOf(scope);
      return pdp.userPermissions(env, body);
    },

    planResources(scope: EnvScope, body: unknown) {
      const { pdp, env } = pdpOf(scope);
      return pdp.planResources(env, body);
    },

    listResources(scope: EnvScope, body: unknown) {
      const { pdp, env } = pdpOf(scope);
      return pdp.listResources(env, body);
    },

    listSubjects(scope: EnvScope, body: unknown) {
      const { pdp, env } = pdpOf(scope);
      return pdp.listSubjects(env, body);
    },

    async status(scope: EnvScope) {
      const { pdp, env } = pdpOf(scope);
      const held = await pdp.held(env);
      const head = await deps.store.db
        .selectFrom("environments")
        .select("revision")
        .where("id", "=", scope.environment.id)
        .executeTakeFirst();
      const environmentRevision = Number(head?.revision ?? 0);
      return {
        environment_revision: environmentRevision,
        pdp_id: pdp.pdpId,
        pdp_revision: held.revision,
        revisions_behind: Math.max(0, environmentRevision - held.revision),
        lag_ms: Math.max(0, Date.now() - held.lastSyncAt),
        ...(deps.pdpSlot.ports && { pdp_port: deps.pdpSlot.ports.pdp, opa_port: deps.pdpSlot.ports.opa }),
      };
    },
  };
}
