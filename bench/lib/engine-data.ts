/**
 * Generated environments for the in-process engine and the scale scenarios, with checks whose answers follow
 * from the construction. Same schema as the PDP scenario (see pdp-dataset.ts): tenant roles on `document`,
 * the account -> project -> folder -> file chain with derived roles, and ABAC on `report`.
 *
 * Each account holds 4 projects of 5 folders of 10 files: 224 tuples and 225 instances per account. Every user
 * holds one tenant role in its home tenant and one instance role: admin on an account of its home tenant (even
 * users: writes that account's files through a depth-3 derivation) or editor on a folder (odd users: depth 1).
 */
import type {
  CheckQuery,
  EnvironmentData,
  ResourceData,
  RoleAssignmentData,
  RelationshipTupleData,
} from "../../src/pdp/engine/types.ts";
import { rng, TENANT_ROLES } from "./pdp-dataset.ts";

const PROJECTS = 4;
const FOLDERS = 5;
const FILES = 10;
const TUPLES_PER_ACCOUNT = PROJECTS + PROJECTS * FOLDERS + PROJECTS * FOLDERS * FILES;
const DEPARTMENTS = ["eng", "ops", "audit", "sales", "hr"];
const ROLE_NAMES = Object.keys(TENANT_ROLES);
const DOC_ACTIONS = ["read", "write", "delete", "share"];

export interface EngineCheck {
  query: CheckQuery;
  allow: boolean;
}

export interface GeneratedEnvironment {
  data: EnvironmentData;
  counts: {
    users: number;
    tenants: number;
    instances: number;
    role_assignments: number;
    tuples: number;
    facts: number;
  };
  checks: { rbac: EngineCheck[]; rebac3: EngineCheck[]; rebac1: EngineCheck[]; abac: EngineCheck[] };
}

export const SCHEMA: {
  resources: ResourceData[];
  roles: EnvironmentData["roles"];
  condition_sets: EnvironmentData["condition_sets"];
  condition_set_rules: EnvironmentData["condition_set_rules"];
} = {
  resources: [
    { key: "document", actions: DOC_ACTIONS },
    { key: "account", actions: ["view"], roles: { admin: { permissions: ["view"] } } },
    {
      key: "project",
      actions: ["view"],
      relations: { account: "account" },
      roles: {
        editor: {
          permissions: ["view"],
          granted_to: {
            users_with_role: [{ role: "admin", on_resource: "account", linked_by_relation: "account" }],
          },
        },
      },
    },
    {
      key: "folder",
      actions: ["view", "edit"],
      relations: { project: "project" },
      roles: {
        editor: {
          permissions: ["view", "edit"],
          granted_to: {
            users_with_role: [{ role: "editor", on_resource: "project", linked_by_relation: "project" }],
          },
        },
      },
    },
    {
      key: "file",
      actions: ["read", "write"],
      relations: { folder: "folder" },
      roles: {
        viewer: { permissions: ["read"] },
        editor: {
          permissions: ["read", "write"],
          granted_to: {
            users_with_role: [{ role: "editor", on_resource: "folder", linked_by_relation: "folder" }],
          },
        },
      },
    },
    {
      key: "report",
      actions: ["read", "export"],
      attributes: { classification: { type: "string" }, region: { type: "string" } },
    },
  ],
  roles: ROLE_NAMES.map((key) => ({
    key,
    permissions: (TENANT_ROLES[key] ?? []).map((action) => `document:${action}`),
  })),
  condition_sets: [
    {
      key: "senior_staff",
      type: "userset",
      conditions: {
        allOf: [
          { "user.level": { "greater-than-equals": 5 } },
          { "user.department": { in: ["eng", "ops"] } },
        ],
      },
    },
    { key: "auditors", type: "userset", conditions: { allOf: [{ "user.department": { equals: "audit" } }] } },
    {
      key: "eu_staff",
      type: "userset",
      conditions: {
        allOf: [{ "user.region": { equals: "eu" } }, { "user.level": { "greater-than-equals": 3 } }],
      },
    },
    {
      key: "internal_reports",
      type: "resourceset",
      resource: "report",
      conditions: { allOf: [{ "resource.classification": { in: ["internal", "public"] } }] },
    },
    {
      key: "public_reports",
      type: "resourceset",
      resource: "report",
      conditions: { allOf: [{ "resource.classification": { equals: "public" } }] },
    },
    {
      key: "eu_reports",
      type: "resourceset",
      resource: "report",
      conditions: {
        allOf: [
          { "resource.region": { equals: "eu" } },
          { "resource.classification": { "not-equals": "secret" } },
        ],
      },
    },
  ],
  condition_set_rules: [
    { user_set: "senior_staff", permission: "report:read", resource_set: "internal_reports" },
    { user_set: "auditors", permission: "report:read", resource_set: "internal_reports" },
    { user_set: "eu_staff", permission: "report:read", resource_set: "eu_reports" },
    { user_set: "auditors", permission: "report:export", resource_set: "public_reports" },
    { user_set: "senior_staff", permission: "report:export", resource_set: "eu_reports" },
  ],
};

function abacAllows(
  user: { level: number; department: string; region: string },
  action: string,
  resource: { classification: string; region: string },
) {
  const senior = user.level >= 5 && (user.department === "eng" || user.department === "ops");
  const auditor = user.department === "audit";
  const euStaff = user.region === "eu" && user.level >= 3;
  const internal = resource.classification === "internal" || resource.classification === "public";
  const euReport = resource.region === "eu" && resource.classification !== "secret";
  if (action === "read") return (senior && internal) || (auditor && internal) || (euStaff && euReport);
  return (auditor && resource.classification === "public") || (senior && euReport);
}

/**
 * `users` users (one tenant role + one instance role each) and about `tuples` relationship tuples (rounded up to
 * whole accounts), in users/100 tenants (at least one, at most one per account).
 */
export function generateEnvironment(options: {
  users: number;
  tuples: number;
  checks: number;
  seed?: number;
}): GeneratedEnvironment {
  const random = rng(options.seed ?? 11);
  const int = (below: number) => Math.floor(random() * below);
  const accounts = Math.max(1, Math.ceil(options.tuples / TUPLES_PER_ACCOUNT));
  const tenantCount = Math.max(1, Math.min(Math.ceil(options.users / 100), accounts));
  const tenantOfAccount = (a: number) => a % tenantCount;
  const accountsIn = (t: number) => Math.floor((accounts - 1 - t) / tenantCount) + 1;
  const accountOf = (t: number, j: number) => t + j * tenantCount;

  const tenants = Array.from({ length: tenantCount }, (_, t) => ({ key: `t${t}` }));
  const users: NonNullable<EnvironmentData["users"]> = [];
  const attrs: { level: number; department: string; region: string }[] = [];
  const assignments: RoleAssignmentData[] = [];
  const tenantRole: string[] = [];
  /** even users: their account; odd users: their folder as [account, project, folder] */
  const holds: number[][] = [];
  for (let i = 0; i < options.users; i++) {
    const attributes = {
      level: int(10),
      department: DEPARTMENTS[int(DEPARTMENTS.length)] as string,
      region: random() < 0.5 ? "eu" : "us",
    };
    attrs.push(attributes);
    users.push({ key: `u${i}`, attributes: attributes });
    const home = i % tenantCount;
    const role = ROLE_NAMES[int(ROLE_NAMES.length)] as string;
    tenantRole.push(role);
    assignments.push({ user: `u${i}`, role, tenant: `t${home}` });
    const account = accountOf(home, int(accountsIn(home)));
    if (i % 2 === 0) {
      holds.push([account]);
      assignments.push({
        user: `u${i}`,
        role: "admin",
        tenant: `t${home}`,
        resource_instance: `account:a${account}`,
      });
    } else {
      const where = [account, int(PROJECTS), int(FOLDERS)];
      holds.push(where);
      assignments.push({
        user: `u${i}`,
        role: "editor",
        tenant: `t${home}`,
        resource_instance: `folder:f${where.join("_")}`,
      });
    }
  }
  const tuples: RelationshipTupleData[] = [];
  for (let a = 0; a < accounts; a++) {
    const tenant = `t${tenantOfAccount(a)}`;
    for (let p = 0; p < PROJECTS; p++) {
      tuples.push({ subject: `account:a${a}`, relation: "account", object: `project:p${a}_${p}`, tenant });
      for (let f = 0; f < FOLDERS; f++) {
        tuples.push({
          subject: `project:p${a}_${p}`,
          relation: "project",
          object: `folder:f${a}_${p}_${f}`,
          tenant,
        });
        for (let k = 0; k < FILES; k++) {
          tuples.push({
            subject: `folder:f${a}_${p}_${f}`,
            relation: "folder",
            object: `file:x${a}_${p}_${f}_${k}`,
            tenant,
          });
        }
      }
    }
  }

  const checkCount = options.checks;
  const rbac: EngineCheck[] = [];
  const rebac3: EngineCheck[] = [];
  const rebac1: EngineCheck[] = [];
  const abac: EngineCheck[] = [];
  const fileQuery = (i: number, where: number[]): CheckQuery => ({
    user: { key: `u${i}` },
    action: "write",
    resource: { type: "file", key: `x${where.join("_")}`, tenant: `t${tenantOfAccount(where[0] as number)}` },
    context: {},
  });
  for (let c = 0; c < checkCount; c++) {
    let i = int(options.users);
    const home = i % tenantCount;
    const action = DOC_ACTIONS[int(DOC_ACTIONS.length)] as string;
    const tenant = random() < 0.7 ? home : int(tenantCount);
    rbac.push({
      query: {
        user: { key: `u${i}` },
        action,
        resource: { type: "document", tenant: `t${tenant}` },
        context: {},
      },
      allow: tenant === home && (TENANT_ROLES[tenantRole[i] as string] ?? []).includes(action),
    });

    i = int(options.users) & ~1; // an account admin
    const mine = holds[i]?.[0] as number;
    const other = accounts > 1 ? (mine + 1 + int(accounts - 1)) % accounts : mine;
    const allow3 = accounts === 1 || random() < 0.5;
    rebac3.push({
      query: fileQuery(i, [allow3 ? mine : other, int(PROJECTS), int(FOLDERS), int(FILES)]),
      allow: allow3,
    });

    i = Math.min(options.users - 1, int(options.users) | 1); // a folder editor
    const [a, p, f] = holds[i] as [number, number, number];
    if (i % 2 === 1) {
      const allow1 = random() < 0.5;
      rebac1.push({
        query: fileQuery(i, [a, p, allow1 ? f : (f + 1 + int(FOLDERS - 1)) % FOLDERS, int(FILES)]),
        allow: allow1,
      });
    }

    i = int(options.users);
    const act = random() < 0.7 ? "read" : "export";
    const attributes = {
      classification: ["public", "internal", "secret"][int(3)] as string,
      region: random() < 0.5 ? "eu" : "us",
    };
    abac.push({
      query: {
        user: { key: `u${i}` },
        action: act,
        resource: { type: "report", tenant: `t${i % tenantCount}`, attributes },
        context: {},
      },
      allow: abacAllows(attrs[i] as { level: number; department: string; region: string }, act, attributes),
    });
  }

  const instances = accounts * (1 + PROJECTS + PROJECTS * FOLDERS + PROJECTS * FOLDERS * FILES);
  return {
    data: { ...SCHEMA, tenants, users, role_assignments: assignments, relationship_tuples: tuples },
    counts: {
      users: users.length,
      tenants: tenants.length,
      instances,
      role_assignments: assignments.length,
      tuples: tuples.length,
      facts: users.length + tenants.length + instances + assignments.length + tuples.length,
    },
    checks: { rbac, rebac3, rebac1, abac },
  };
}
