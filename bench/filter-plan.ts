// Filter plan latency (issue 40): a user with 10,000 accessible documents, derived through folders, among many
// tuples and other users' grants; plans computed in process, as the PDP's /plan/resources computes them.
//   node --import tsx bench/filter-plan.ts [documents=1000000]
import { performance } from "node:perf_hooks";
import { createEngine, type EnvironmentData } from "../src/pdp/engine/index.ts";

const DOCUMENTS = Number(process.argv[2] ?? 1_000_000);
const PER_FOLDER = 100;
const FOLDERS = DOCUMENTS / PER_FOLDER;
const TENANTS = 10;
const USERS = 20_000;
const RUNS = 200;

const t0 = performance.now();
const data: EnvironmentData = {
  resources: [
    {
      key: "folder",
      actions: ["read"],
      roles: { editor: { permissions: ["read"] } },
    },
    {
      key: "document",
      actions: ["read", "write"],
      relations: { parent: "folder" },
      roles: {
        editor: {
          permissions: ["read", "write"],
          granted_to: {
            users_with_role: [{ role: "editor", on_resource: "folder", linked_by_relation: "parent" }],
          },
        },
      },
    },
  ],
  roles: [{ key: "viewer", permissions: ["document:read"] }],
  tenants: Array.from({ length: TENANTS }, (_, i) => ({ key: `t${i}` })),
};
const engine = createEngine(data);
const tenantOf = (folder: number) => `t${folder % TENANTS}`;
engine.loadPage({
  users: Array.from({ length: USERS }, (_, i) => ({ key: `u${i}` })),
  resource_instances: Array.from({ length: FOLDERS }, (_, f) => ({
    resource: "folder",
    key: `f${f}`,
    tenant: tenantOf(f),
  })),
});
for (let start = 0; start < DOCUMENTS; start += 100_000) {
  const count = Math.min(100_000, DOCUMENTS - start);
  engine.loadPage({
    relationship_tuples: Array.from({ length: count }, (_, i) => {
      const doc = start + i;
      const folder = Math.floor(doc / PER_FOLDER);
      return {
        subject: `folder:f${folder}`,
        relation: "parent",
        object: `document:d${doc}`,
        tenant: tenantOf(folder),
      };
    }),
  });
}
// Every user edits one folder (100 documents); u0 edits 100 folders of tenant t0: 10,000 documents.
engine.loadPage({
  role_assignments: [
    ...Array.from({ length: USERS }, (_, u) => {
      const folder = (u * 7919) % FOLDERS;
      return {
        user: `u${u}`,
        role: "editor",
        tenant: tenantOf(folder),
        resource_instance: `folder:f${folder}`,
      };
    }),
    ...Array.from({ length: 100 }, (_, i) => ({
      user: "u0",
      role: "editor",
      tenant: "t0",
      resource_instance: `folder:f${i * TENANTS}`,
    })),
    { user: "u1", role: "viewer", tenant: "t3" },
  ],
});
const loadMs = performance.now() - t0;

function measure(label: string, plan: () => { key_count: number }): void {
  const times: number[] = [];
  let keys = 0;
  for (let i = 0; i < RUNS + 20; i++) {
    const start = performance.now();
    keys = plan().key_count;
    if (i >= 20) times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => (times[Math.floor(q * (times.length - 1))] as number).toFixed(3);
  console.log(
    `${label.padEnd(44)} key_count ${String(keys).padStart(6)}  p50 ${at(0.5)} ms  p95 ${at(0.95)} ms`,
  );
}

console.log(
  `${DOCUMENTS} documents, ${DOCUMENTS} tuples, ${USERS + 101} assignments, loaded in ${(loadMs / 1000).toFixed(1)} s; ${RUNS} runs each`,
);
const plan = (user: string, action = "write") =>
  engine.planResources({ user: { key: user }, action, resource: { type: "document" } });
measure("u0: 10,000 documents derived from 100 folders", () => plan("u0"));
measure("u2: 100 documents derived from 1 folder", () => plan("u2"));
measure("u1: a tenant role (tenant in ...)", () => plan("u1", "read"));
