/**
 * The environment of the PDP scenario and the checks sent to it, with the answer each check must get, worked
 * out here from the data's construction (not by asking the engine).
 *
 * - RBAC: `document` with tenant roles viewer/editor/admin; every user holds one role in a home tenant, every
 *   fifth user also viewer in a second tenant.
 * - ReBAC: per tenant two `account`s, each with 5 `project`s of 5 `folder`s of 4 `file`s, linked by tuples
 *   (file -folder-> folder -project-> project -account-> account). `account` admins are `project` editors, who
 *   are `folder` editors, who are `file` editors: a user holding admin on an account can write its files through
 *   a derivation of depth 3; a user holding editor on a folder can write its files at depth 1.
 * - ABAC: `report` with condition sets on user attributes (stored) and resource attributes (sent in the check).
 */

export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const TENANT_ROLES: Record<string, string[]> = {
  viewer: ["read"],
  editor: ["read", "write"],
  admin: ["read", "write", "delete", "share"],
};
const ROLE_NAMES = Object.keys(TENANT_ROLES);
const DOC_ACTIONS = ["read", "write", "delete", "share"];
const DEPARTMENTS = ["eng", "ops", "audit", "sales", "hr"];
const ACCOUNTS = 2;
const PROJECTS = 5;
const FOLDERS = 5;
const FILES = 4;

export interface CheckBody {
  user: { key: string };
  action: string;
  resource: { type: string; key?: string; tenant: string; attributes?: Record<string, unknown> };
  context: Record<string, unknown>;
}

export interface Check {
  body: CheckBody;
  allow: boolean;
}

export interface RbacCheck extends Check {
  /** The same question for Cerbos (the user's tenant roles travel in the request). */
  tenantRoles: Record<string, string[]>;
}

export interface UserSpec {
  key: string;
  attributes: { level: number; department: string; region: string };
  home: number;
  role: string;
  second?: number;
}

export interface PdpDataset {
  tenants: string[];
  users: UserSpec[];
  resources: unknown[];
  tenantRoles: { key: string; name: string; permissions: string[] }[];
  tenantAssignments: { user: string; role: string; tenant: string }[];
  tuples: { subject: string; relation: string; object: string; tenant: string }[];
  instanceAssignments: { user: string; role: string; tenant: string; resource_instance: string }[];
  conditionSets: unknown[];
  setRules: { user_set: string; permission: string; resource_set: string }[];
  checks: { rbac: RbacCheck[]; rebac1: Check[]; rebac3: Check[]; abac: Check[] };
  bulk: { checks: CheckBody[]; pattern: string }[];
}

const t = (i: number) => `t${i}`;
const acc = (tn: number, a: number) => `acc_${tn}_${a}`;
const prj = (tn: number, a: number, p: number) => `prj_${tn}_${a}_${p}`;
const fld = (tn: number, a: number, p: number, f: number) => `fld_${tn}_${a}_${p}_${f}`;
const file = (tn: number, a: number, p: number, f: number, k: number) => `file_${tn}_${a}_${p}_${f}_${k}`;

/** Who may read/export a report with these attributes (the condition sets and set rules below, by hand). */
function abacAllows(
  u: UserSpec["attributes"],
  action: string,
  r: { classification: string; region: string },
): boolean {
  const senior = u.level >= 5 && (u.department === "eng" || u.department === "ops");
  const auditor = u.department === "audit";
  const euStaff = u.region === "eu" && u.level >= 3;
  const internal = r.classification === "internal" || r.classification === "public";
  const pub = r.classification === "public";
  const euReport = r.region === "eu" && r.classification !== "secret";
  if (action === "read") return (senior && internal) || (auditor && internal) || (euStaff && euReport);
  if (action === "export") return (auditor && pub) || (senior && euReport);
  return false;
}

export function buildPdpDataset(o: {
  users: number;
  tenants: number;
  checks: number;
  bulkBodies: number;
  bulkSize: number;
}): PdpDataset {
  const random = rng(7);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const int = (n: number) => Math.floor(random() * n);

  const tenants = Array.from({ length: o.tenants }, (_, i) => t(i));
  const users: UserSpec[] = [];
  for (let i = 0; i < o.users; i++) {
    const home = i % o.tenants;
    const u: UserSpec = {
      key: `u${i}`,
      attributes: { level: int(10), department: pick(DEPARTMENTS), region: random() < 0.5 ? "eu" : "us" },
      home,
      role: ROLE_NAMES[Math.floor(i / o.tenants) % ROLE_NAMES.length] as string,
    };
    if (i % 5 === 0) u.second = (home + 1 + int(o.tenants - 1)) % o.tenants;
    users.push(u);
  }
  const tenantAssignments = users.flatMap((u) => [
    { user: u.key, role: u.role, tenant: t(u.home) },
    ...(u.second !== undefined ? [{ user: u.key, role: "viewer", tenant: t(u.second) }] : []),
  ]);

  const resources = [
    { key: "document", name: "Document", actions: Object.fromEntries(DOC_ACTIONS.map((a) => [a, {}])) },
    {
      key: "account",
      name: "Account",
      actions: { view: {} },
      roles: { admin: { name: "Admin", permissions: ["view"] } },
    },
    {
      key: "project",
      name: "Project",
      actions: { view: {} },
      relations: { account: "account" },
      roles: {
        editor: {
          name: "Editor",
          permissions: ["view"],
          granted_to: {
            users_with_role: [{ role: "admin", on_resource: "account", linked_by_relation: "account" }],
          },
        },
      },
    },
    {
      key: "folder",
      name: "Folder",
      actions: { view: {}, edit: {} },
      relations: { project: "project" },
      roles: {
        editor: {
          name: "Editor",
          permissions: ["view", "edit"],
          granted_to: {
            users_with_role: [{ role: "editor", on_resource: "project", linked_by_relation: "project" }],
          },
        },
      },
    },
    {
      key: "file",
      name: "File",
      actions: { read: {}, write: {} },
      relations: { folder: "folder" },
      roles: {
        viewer: { name: "Viewer", permissions: ["read"] },
        editor: {
          name: "Editor",
          permissions: ["read", "write"],
          granted_to: {
            users_with_role: [{ role: "editor", on_resource: "folder", linked_by_relation: "folder" }],
          },
        },
      },
    },
    {
      key: "report",
      name: "Report",
      actions: { read: {}, export: {} },
      attributes: { classification: { type: "string" }, region: { type: "string" } },
    },
  ];
  const tenantRoles = ROLE_NAMES.map((r) => ({
    key: r,
    name: r,
    permissions: (TENANT_ROLES[r] ?? []).map((a) => `document:${a}`),
  }));

  const tuples: PdpDataset["tuples"] = [];
  for (let tn = 0; tn < o.tenants; tn++) {
    for (let a = 0; a < ACCOUNTS; a++) {
      for (let p = 0; p < PROJECTS; p++) {
        tuples.push({
          subject: `account:${acc(tn, a)}`,
          relation: "account",
          object: `project:${prj(tn, a, p)}`,
          tenant: t(tn),
        });
        for (let f = 0; f < FOLDERS; f++) {
          tuples.push({
            subject: `project:${prj(tn, a, p)}`,
            relation: "project",
            object: `folder:${fld(tn, a, p, f)}`,
            tenant: t(tn),
          });
          for (let k = 0; k < FILES; k++) {
            tuples.push({
              subject: `folder:${fld(tn, a, p, f)}`,
              relation: "folder",
              object: `file:${file(tn, a, p, f, k)}`,
              tenant: t(tn),
            });
          }
        }
      }
    }
  }

  // Account admins (depth 3) and folder editors (depth 1).
  const accountOf = new Map<string, number>();
  const folderOf = new Map<string, [number, number, number]>();
  const instanceAssignments: PdpDataset["instanceAssignments"] = [];
  for (const [i, u] of users.entries()) {
    if (i % 4 === 0) {
      const a = int(ACCOUNTS);
      accountOf.set(u.key, a);
      instanceAssignments.push({
        user: u.key,
        role: "admin",
        tenant: t(u.home),
        resource_instance: `account:${acc(u.home, a)}`,
      });
    } else if (i % 4 === 1) {
      const where: [number, number, number] = [int(ACCOUNTS), int(PROJECTS), int(FOLDERS)];
      folderOf.set(u.key, where);
      instanceAssignments.push({
        user: u.key,
        role: "editor",
        tenant: t(u.home),
        resource_instance: `folder:${fld(u.home, ...where)}`,
      });
    }
  }

  const conditionSets = [
    {
      key: "senior_staff",
      name: "Senior staff",
      type: "userset",
      conditions: {
        allOf: [
          { "user.level": { "greater-than-equals": 5 } },
          { "user.department": { in: ["eng", "ops"] } },
        ],
      },
    },
    {
      key: "auditors",
      name: "Auditors",
      type: "userset",
      conditions: { allOf: [{ "user.department": { equals: "audit" } }] },
    },
    {
      key: "eu_staff",
      name: "EU staff",
      type: "userset",
      conditions: {
        allOf: [{ "user.region": { equals: "eu" } }, { "user.level": { "greater-than-equals": 3 } }],
      },
    },
    {
      key: "internal_reports",
      name: "Internal reports",
      type: "resourceset",
      resource_id: "report",
      conditions: { allOf: [{ "resource.classification": { in: ["internal", "public"] } }] },
    },
    {
      key: "public_reports",
      name: "Public reports",
      type: "resourceset",
      resource_id: "report",
      conditions: { allOf: [{ "resource.classification": { equals: "public" } }] },
    },
    {
      key: "eu_reports",
      name: "EU reports",
      type: "resourceset",
      resource_id: "report",
      conditions: {
        allOf: [
          { "resource.region": { equals: "eu" } },
          { "resource.classification": { "not-equals": "secret" } },
        ],
      },
    },
  ];
  const setRules = [
    { user_set: "senior_staff", permission: "report:read", resource_set: "internal_reports" },
    { user_set: "auditors", permission: "report:read", resource_set: "internal_reports" },
    { user_set: "eu_staff", permission: "report:read", resource_set: "eu_reports" },
    { user_set: "auditors", permission: "report:export", resource_set: "public_reports" },
    { user_set: "senior_staff", permission: "report:export", resource_set: "eu_reports" },
  ];

  // ---- checks ----
  const rolesIn = (u: UserSpec): Record<string, string[]> => ({
    [t(u.home)]: [u.role],
    ...(u.second !== undefined && { [t(u.second)]: ["viewer"] }),
  });
  const rbac: RbacCheck[] = [];
  for (let n = 0; n < o.checks; n++) {
    const u = pick(users);
    const action = pick(DOC_ACTIONS);
    const roll = random();
    const tenant = roll < 0.7 ? u.home : roll < 0.85 && u.second !== undefined ? u.second : int(o.tenants);
    const roles = rolesIn(u)[t(tenant)] ?? [];
    rbac.push({
      body: { user: { key: u.key }, action, resource: { type: "document", tenant: t(tenant) }, context: {} },
      allow: roles.some((r) => TENANT_ROLES[r]?.includes(action)),
      tenantRoles: rolesIn(u),
    });
  }
  const fileCheck = (
    u: UserSpec,
    where: [number, number, number, number, number],
    allow: boolean,
  ): Check => ({
    body: {
      user: { key: u.key },
      action: "write",
      resource: { type: "file", key: file(...where), tenant: t(where[0]) },
      context: {},
    },
    allow,
  });
  const admins = users.filter((u) => accountOf.has(u.key));
  const folderEditors = users.filter((u) => folderOf.has(u.key));
  const rebac3: Check[] = [];
  const rebac1: Check[] = [];
  for (let n = 0; n < o.checks; n++) {
    const u = pick(admins);
    const mine = accountOf.get(u.key) as number;
    const allow = random() < 0.5;
    rebac3.push(
      fileCheck(u, [u.home, allow ? mine : 1 - mine, int(PROJECTS), int(FOLDERS), int(FILES)], allow),
    );
    const e = pick(folderEditors);
    const [a, p, f] = folderOf.get(e.key) as [number, number, number];
    const ok = random() < 0.5;
    // a deny names a file of another folder of the same project: the search climbs the whole chain and fails
    rebac1.push(fileCheck(e, [e.home, a, p, ok ? f : (f + 1 + int(FOLDERS - 1)) % FOLDERS, int(FILES)], ok));
  }
  const abac: Check[] = [];
  for (let n = 0; n < o.checks; n++) {
    const u = pick(users);
    const action = random() < 0.7 ? "read" : "export";
    const attributes = {
      classification: pick(["public", "internal", "secret"]),
      region: random() < 0.5 ? "eu" : "us",
    };
    abac.push({
      body: {
        user: { key: u.key },
        action,
        resource: { type: "report", tenant: t(u.home), attributes },
        context: {},
      },
      allow: abacAllows(u.attributes, action, attributes),
    });
  }
  const bulk: PdpDataset["bulk"] = [];
  const patterns = new Set<string>();
  while (bulk.length < o.bulkBodies) {
    const picked = Array.from({ length: o.bulkSize }, () => pick(rbac));
    const pattern = picked.map((c) => (c.allow ? "1" : "0")).join("");
    if (patterns.has(pattern)) continue;
    patterns.add(pattern);
    bulk.push({ checks: picked.map((c) => c.body), pattern });
  }

  return {
    tenants,
    users,
    resources,
    tenantRoles,
    tenantAssignments,
    tuples,
    instanceAssignments,
    conditionSets,
    setRules,
    checks: { rbac, rebac1, rebac3, abac },
    bulk,
  };
}
