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

const tenantKey = (i: number) => `t${i}`;
const acc = (tn: number, a: number) => `acc_${tn}_${a}`;
const prj = (tn: number, a: number, p: number) => `prj_${tn}_${a}_${p}`;
const fld = (tn: number, a: number, p: number, f: number) => `fld_${tn}_${a}_${p}_${f}`;
const file = (tn: number, a: number, p: number, f: number, k: number) => `file_${tn}_${a}_${p}_${f}_${k}`;

/** Who may read/export a report with these attributes (the condition sets and set rules below, by hand). */
function abacAllows(
  user: UserSpec["attributes"],
  action: string,
  resource: { classification: string; region: string },
): boolean {
  const senior = user.level >= 5 && (user.department === "eng" || user.department === "ops");
  const auditor = user.department === "audit";
  const euStaff = user.region === "eu" && user.level >= 3;
  const internal = resource.classification === "internal" || resource.classification === "public";
  const pub = resource.classification === "public";
  const euReport = resource.region === "eu" && resource.classification !== "secret";
  if (action === "read") return (senior && internal) || (auditor && internal) || (euStaff && euReport);
  if (action === "export") return (auditor && pub) || (senior && euReport);
  return false;
}

export function buildPdpDataset(options: {
  users: number;
  tenants: number;
  checks: number;
  bulkBodies: number;
  bulkSize: number;
}): PdpDataset {
  const random = rng(7);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const int = (below: number) => Math.floor(random() * below);

  const tenants = Array.from({ length: options.tenants }, (_, i) => tenantKey(i));
  const users: UserSpec[] = [];
  for (let i = 0; i < options.users; i++) {
    const home = i % options.tenants;
    const user: UserSpec = {
      key: `u${i}`,
      attributes: { level: int(10), department: pick(DEPARTMENTS), region: random() < 0.5 ? "eu" : "us" },
      home,
      role: ROLE_NAMES[Math.floor(i / options.tenants) % ROLE_NAMES.length] as string,
    };
    if (i % 5 === 0) user.second = (home + 1 + int(options.tenants - 1)) % options.tenants;
    users.push(user);
  }
  const tenantAssignments = users.flatMap((user) => [
    { user: user.key, role: user.role, tenant: tenantKey(user.home) },
    ...(user.second !== undefined
      ? [{ user: user.key, role: "viewer", tenant: tenantKey(user.second) }]
      : []),
  ]);

  const resources = [
    {
      key: "document",
      name: "Document",
      actions: Object.fromEntries(DOC_ACTIONS.map((action) => [action, {}])),
    },
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
  const tenantRoles = ROLE_NAMES.map((role) => ({
    key: role,
    name: role,
    permissions: (TENANT_ROLES[role] ?? []).map((action) => `document:${action}`),
  }));

  const tuples: PdpDataset["tuples"] = [];
  for (let tn = 0; tn < options.tenants; tn++) {
    for (let a = 0; a < ACCOUNTS; a++) {
      for (let p = 0; p < PROJECTS; p++) {
        tuples.push({
          subject: `account:${acc(tn, a)}`,
          relation: "account",
          object: `project:${prj(tn, a, p)}`,
          tenant: tenantKey(tn),
        });
        for (let f = 0; f < FOLDERS; f++) {
          tuples.push({
            subject: `project:${prj(tn, a, p)}`,
            relation: "project",
            object: `folder:${fld(tn, a, p, f)}`,
            tenant: tenantKey(tn),
          });
          for (let k = 0; k < FILES; k++) {
            tuples.push({
              subject: `folder:${fld(tn, a, p, f)}`,
              relation: "folder",
              object: `file:${file(tn, a, p, f, k)}`,
              tenant: tenantKey(tn),
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
  for (const [i, user] of users.entries()) {
    if (i % 4 === 0) {
      const a = int(ACCOUNTS);
      accountOf.set(user.key, a);
      instanceAssignments.push({
        user: user.key,
        role: "admin",
        tenant: tenantKey(user.home),
        resource_instance: `account:${acc(user.home, a)}`,
      });
    } else if (i % 4 === 1) {
      const where: [number, number, number] = [int(ACCOUNTS), int(PROJECTS), int(FOLDERS)];
      folderOf.set(user.key, where);
      instanceAssignments.push({
        user: user.key,
        role: "editor",
        tenant: tenantKey(user.home),
        resource_instance: `folder:${fld(user.home, ...where)}`,
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
  const rolesIn = (user: UserSpec): Record<string, string[]> => ({
    [tenantKey(user.home)]: [user.role],
    ...(user.second !== undefined && { [tenantKey(user.second)]: ["viewer"] }),
  });
  const rbac: RbacCheck[] = [];
  for (let n = 0; n < options.checks; n++) {
    const user = pick(users);
    const action = pick(DOC_ACTIONS);
    const roll = random();
    const tenant =
      roll < 0.7 ? user.home : roll < 0.85 && user.second !== undefined ? user.second : int(options.tenants);
    const roles = rolesIn(user)[tenantKey(tenant)] ?? [];
    rbac.push({
      body: {
        user: { key: user.key },
        action,
        resource: { type: "document", tenant: tenantKey(tenant) },
        context: {},
      },
      allow: roles.some((role) => TENANT_ROLES[role]?.includes(action)),
      tenantRoles: rolesIn(user),
    });
  }
  const fileCheck = (
    user: UserSpec,
    where: [number, number, number, number, number],
    allow: boolean,
  ): Check => ({
    body: {
      user: { key: user.key },
      action: "write",
      resource: { type: "file", key: file(...where), tenant: tenantKey(where[0]) },
      context: {},
    },
    allow,
  });
  const admins = users.filter((user) => accountOf.has(user.key));
  const folderEditors = users.filter((user) => folderOf.has(user.key));
  const rebac3: Check[] = [];
  const rebac1: Check[] = [];
  for (let n = 0; n < options.checks; n++) {
    const user = pick(admins);
    const mine = accountOf.get(user.key) as number;
    const allow = random() < 0.5;
    rebac3.push(
      fileCheck(user, [user.home, allow ? mine : 1 - mine, int(PROJECTS), int(FOLDERS), int(FILES)], allow),
    );
    const editor = pick(folderEditors);
    const [a, p, f] = folderOf.get(editor.key) as [number, number, number];
    const ok = random() < 0.5;
    // a deny names a file of another folder of the same project: the search climbs the whole chain and fails
    rebac1.push(
      fileCheck(editor, [editor.home, a, p, ok ? f : (f + 1 + int(FOLDERS - 1)) % FOLDERS, int(FILES)], ok),
    );
  }
  const abac: Check[] = [];
  for (let n = 0; n < options.checks; n++) {
    const user = pick(users);
    const action = random() < 0.7 ? "read" : "export";
    const attributes = {
      classification: pick(["public", "internal", "secret"]),
      region: random() < 0.5 ? "eu" : "us",
    };
    abac.push({
      body: {
        user: { key: user.key },
        action,
        resource: { type: "report", tenant: tenantKey(user.home), attributes },
        context: {},
      },
      allow: abacAllows(user.attributes, action, attributes),
    });
  }
  const bulk: PdpDataset["bulk"] = [];
  const patterns = new Set<string>();
  while (bulk.length < options.bulkBodies) {
    const picked = Array.from({ length: options.bulkSize }, () => pick(rbac));
    const pattern = picked.map((check) => (check.allow ? "1" : "0")).join("");
    if (patterns.has(pattern)) continue;
    patterns.add(pattern);
    bulk.push({ checks: picked.map((check) => check.body), pattern });
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
