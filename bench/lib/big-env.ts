/**
 * A large environment for the standalone PDP, seeded straight into a control plane's SQLite file (millions of
 * rows through the API would take hours): users and role assignments 3/10 of the facts, resource instances and
 * relationship tuples 2/10, 1,000 tenants. User `user-i` is a reader (folder:read) in tenant `t(i % 1000)` only.
 */
import path from "node:path";
import Sqlite from "better-sqlite3";
import type { Api } from "./http.ts";
import { SCHEMA } from "./seed.ts";

export const TENANTS = 1000;

/** The schema the seeded facts use, created through the API on the control plane. */
export async function createBigSchema(admin: Api): Promise<void> {
  await admin.call("POST", `${SCHEMA}/resources`, { key: "folder", name: "Folder", actions: { read: {} } });
  await admin.call("POST", `${SCHEMA}/resources/folder/relations`, {
    key: "parent",
    name: "Parent",
    subject_resource: "folder",
  });
  await admin.call("POST", `${SCHEMA}/roles`, {
    key: "reader",
    name: "Reader",
    permissions: ["folder:read"],
  });
}

/** Seeds about `facts` facts into environment `envKey` of the SQLite file in `dataDir` (no server running on it); the environment's facts, counted. */
export function seedBigEnvironment(
  dataDir: string,
  envKey: string,
  facts: number,
): { facts: number; users: number } {
  const db = new Sqlite(path.join(dataDir, "gatehouse.db"));
  try {
    const env = db
      .prepare("select id, organization_id, project_id from environments where key = ?")
      .get(envKey) as { id: string; organization_id: string; project_id: string };
    const scope = [env.organization_id, env.project_id, env.id];
    const id = (table: string, where: string) =>
      (
        db.prepare(`select id from ${table} where environment_id = ? and ${where}`).get(env.id) as {
          id: string;
        }
      ).id;
    const reader = id("roles", "key = 'reader'");
    const folder = id("resources", "key = 'folder'");
    const parent = id("relations", "key = 'parent'");
    const users = Math.round(facts * 0.3);
    const instances = Math.round(facts * 0.2);
    const at = "2026-01-01T00:00:00.000+00:00";
    const series = (n: number) =>
      `(with recursive s(i) as (select 0 union all select i + 1 from s where i < ${n - 1}) select i from s)`;
    db.exec("begin");
    db.prepare(
      `insert into tenants (id, organization_id, project_id, environment_id, key, name, attributes, created_at, updated_at, last_action_at)
       select 'tn' || printf('%08d', i), ?, ?, ?, 't' || i, 'T' || i, '{"tier":"gold"}', '${at}', '${at}', '${at}' from ${series(TENANTS)}`,
    ).run(...scope);
    db.prepare(
      `insert into users (id, organization_id, project_id, environment_id, key, email, first_name, last_name, attributes, created_at, updated_at)
       select 'us' || printf('%010d', i), ?, ?, ?, 'user-' || i, 'user-' || i || '@example.com', 'First', 'Last', '{"plan":"pro"}', '${at}', '${at}' from ${series(users)}`,
    ).run(...scope);
    db.prepare(
      `insert into role_assignments (id, organization_id, project_id, environment_id, user_id, role_id, tenant_id, resource_instance_id, created_at)
       select 'ra' || printf('%010d', i), ?, ?, ?, 'us' || printf('%010d', i), ?, 'tn' || printf('%08d', i % ${TENANTS}), null, '${at}' from ${series(users)}`,
    ).run(...scope, reader);
    db.prepare(
      `insert into resource_instances (id, organization_id, project_id, environment_id, resource_id, tenant_id, key, attributes, created_at, updated_at)
       select 'ri' || printf('%010d', i), ?, ?, ?, ?, 'tn' || printf('%08d', i % ${TENANTS}), 'f' || i, '{}', '${at}', '${at}' from ${series(instances)}`,
    ).run(...scope, folder);
    db.prepare(
      `insert into relationship_tuples (id, organization_id, project_id, environment_id, subject_id, relation_id, object_id, tenant_id, created_at, updated_at)
       select 'rt' || printf('%010d', i), ?, ?, ?, 'ri' || printf('%010d', i / 2), ?, 'ri' || printf('%010d', i), 'tn' || printf('%08d', i % ${TENANTS}), '${at}', '${at}' from ${series(instances)} where i > 0
       union all select 'rt0000000000', ?, ?, ?, 'ri0000000001', ?, 'ri0000000000', 'tn00000000', '${at}', '${at}'`,
    ).run(...scope, parent, ...scope, parent);
    db.exec("commit; analyze");
    // Counted, not worked out: an environment may hold facts of its own (its default tenant).
    const count = (table: string) =>
      (db.prepare(`select count(*) as n from ${table} where environment_id = ?`).get(env.id) as { n: number })
        .n;
    const tables = ["users", "tenants", "resource_instances", "role_assignments", "relationship_tuples"];
    return { facts: tables.map(count).reduce((a, b) => a + b, 0), users };
  } finally {
    db.close();
  }
}
