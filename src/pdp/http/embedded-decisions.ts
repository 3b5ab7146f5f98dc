import { describeReason } from "../engine/describe.ts";
import type { Decision } from "../engine/types.ts";
import type { DecidedEnvironment, ExplainedCheck, DecisionPort } from "../decision-port.ts";
import type { EmbeddedPdp } from "../embedded.ts";
import { listResourcesOf, listSubjectsOf } from "./listing-routes.ts";
import { checkBulk, checkOne, planResourcesOf, userPermissionsOf } from "./server.ts";

const explained = (r: ReturnType<typeof checkOne>): ExplainedCheck => ({
  ...r,
  reason: r.debug.reason as Decision["reason"],
  explanation: describeReason(r.debug.reason) ?? "",
  revision: r.debug.revision,
});

/**
 * The control plane's checks (a session or an API key with read access), decided by the embedded PDP's copy of
 * the environment with its own routes' functions, so they are logged to the decision log the same way.
 */
export function embeddedDecisions(pdp: EmbeddedPdp): DecisionPort {
  const target = (env: DecidedEnvironment) => pdp.environmentTarget(env);
  return {
    pdpId: pdp.pdpId,
    check: async (env, body) => explained(checkOne(pdp, await target(env), body)),
    bulk: async (env, body) => ({ allow: checkBulk(pdp, await target(env), body).allow.map(explained) }),
    async userPermissions(env, body) {
      const t = await target(env);
      return { permissions: userPermissionsOf(pdp, t, body), revision: t.replica.revision };
    },
    planResources: async (env, body) => planResourcesOf(await target(env), body),
    listResources: async (env, body) => listResourcesOf(await target(env), body),
    listSubjects: async (env, body) => listSubjectsOf(await target(env), body),
    async held(env) {
      const { replica } = await target(env);
      return { revision: replica.revision, lastSyncAt: replica.lastSyncAt };
    },
  };
}
