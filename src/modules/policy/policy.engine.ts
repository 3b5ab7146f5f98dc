import type { EnvironmentData, ResourceRoleData } from "../../pdp/engine/types.ts";
import type { PolicyDoc } from "./policy.format.ts";

/** The engine's data for a policy document (no facts): what a PDP of an environment holding it would load. */
export function engineDataFromPolicy(doc: PolicyDoc): EnvironmentData {
  return {
    resources: Object.entries(doc.resources).map(([key, r]) => ({
      key,
      actions: Object.keys(r.actions),
      attributes: r.attributes,
      action_groups: Object.fromEntries(Object.entries(r.action_groups).map(([k, g]) => [k, g.actions])),
      roles: Object.fromEntries(
        Object.entries(r.roles).map(([k, role]): [string, ResourceRoleData] => [
          k,
          {
            permissions: role.permissions,
            extends: role.extends,
            ...((role.derived_from.length > 0 || role.no_direct_roles_on_object) && {
              granted_to: {
                ...(role.no_direct_roles_on_object && { when: { no_direct_roles_on_object: true } }),
                users_with_role: role.derived_from.map((d) => ({
                  role: d.role,
                  on_resource: d.on_resource,
                  linked_by_relation: d.linked_by_relation,
                  ...(d.no_direct_roles_on_object && { when: { no_direct_roles_on_object: true } }),
                })),
              },
            }),
          },
        ]),
      ),
      relations: Object.fromEntries(Object.entries(r.relations).map(([k, rel]) => [k, rel.subject])),
    })),
    roles: Object.entries(doc.roles).map(([key, role]) => ({
      key,
      permissions: role.permissions,
      extends: role.extends,
    })),
    condition_sets: [
      ...Object.entries(doc.user_sets).map(([key, s]) => ({
        key,
        type: "userset" as const,
        conditions: s.conditions,
      })),
      ...Object.entries(doc.resource_sets).map(([key, s]) => ({
        key,
        type: "resourceset" as const,
        resource: s.resource ?? null,
        conditions: s.conditions,
      })),
    ],
    condition_set_rules: doc.set_rules,
  };
}
