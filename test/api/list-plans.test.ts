import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import {
  CompiledQuery,
  sql,
  SelectQueryNode,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
} from "kysely";
import { buildTestApp, describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { factsUrl } from "../helpers/facts.ts";
import { analyzeTables, seedLargeEnvironment } from "../helpers/large-store.ts";

/** Records every SELECT a Kysely instance runs (compiled as it will run). */
class SelectRecorder implements KyselyPlugin {
  readonly nodes: RootOperationNode[] = [];
  transformQuery({ node }: PluginTransformQueryArgs): RootOperationNode {
    if (SelectQueryNode.is(node)) this.nodes.push(node);
    return node;
  }
  async transformResult({ result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return result;
  }
}

/**
 * The plan of one statement, as lines naming what it reads: on SQLite EXPLAIN QUERY PLAN's; on PostgreSQL each
 * scan node, asked with sequential scans, hash and merge joins and materialisation off in the same session (so a
 * sequential scan in the plan means no index can serve it; see query-plans.test.ts).
 */
async function planLines(e: TestEnv, query: CompiledQuery): Promise<string[]> {
  if (e.dialect === "sqlite") {
    const result = await e.store.db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]),
    );
    return result.rows.map((r) => r.detail);
  }
  const settings = ["enable_seqscan", "enable_hashjoin", "enable_mergejoin", "enable_material"];
  return e.store.db.connection().execute(async (conn) => {
    for (const s of settings) await conn.executeQuery(CompiledQuery.raw(`set ${s} = off`));
    const result = await conn.executeQuery<{ "QUERY PLAN": unknown }>(
      CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]),
    );
    for (const s of settings) await conn.executeQuery(CompiledQuery.raw(`reset ${s}`));
    const lines: string[] = [];
    type Node = Record<string, unknown> & { Plans?: Node[] };
    const walk = (node: Node) => {
      const type = node["Node Type"] as string;
      if (/Scan$/.test(type) && type !== "Subquery Scan" && type !== "CTE Scan" && type !== "Function Scan") {
        const cond = node["Index Cond"] ?? node["Recheck Cond"];
        lines.push(
          `${type} ${String(node["Relation Name"] ?? "")} ${String(node["Index Name"] ?? "")}${cond ? ` (${String(cond)})` : ""}`,
        );
      }
      for (const child of node.Plans ?? []) walk(child);
    };
    walk((result.rows[0]?.["QUERY PLAN"] as { Plan: Node }[])[0]?.Plan as Node);
    return lines;
  });
}

/** The tables that grow with an organization's data; the others (schema, keys, members) stay small by nature. */
const BIG = new Set([
  "users",
  "tenants",
  "role_assignments",
  "resource_instances",
  "relationship_tuples",
  "api_log",
  "decision_log_chunks",
]);

/**
 * What no statement may do to a big table on a large store: read all of it, or all of an index (SQLite `SCAN`,
 * PostgreSQL a sequential scan or an index scan without a condition), or, on SQLite, sort the environment's rows
 * for the page (a search of the whole environment followed by `USE TEMP B-TREE FOR ORDER BY`) where an index gives
 * the order. A search (LIKE with a leading wildcard) reads the environment's rows whatever the index; its cost is
 * bounded by large-lists.test.ts instead. Small tables may be read whole: after ANALYZE that is the planner's best
 * plan for a handful of rows.
 */
function problems(dialect: string, sqlText: string, lines: string[]): string[] {
  if (/ like /i.test(sqlText)) return [];
  const tableOf = new Map<string, string>();
  for (const m of sqlText.matchAll(/"(\w+)" as "(\w+)"/g)) tableOf.set(m[2] as string, m[1] as string);
  const big = (name: string) => BIG.has(tableOf.get(name) ?? name);
  if (dialect === "sqlite") {
    const scans = lines.filter((l) => /^SCAN (\w+)/.test(l) && big(/^SCAN (\w+)/.exec(l)?.[1] as string));
    const wholeEnvironment = lines.some((l) => {
      const m = /^SEARCH (\w+) USING (?:COVERING )?INDEX \S+ \(environment_id=\?\)$/.exec(l);
      return m !== null && big(m[1] as string);
    });
    const sorts = wholeEnvironment ? lines.filter((l) => /TEMP B-TREE FOR ORDER BY/.test(l)) : [];
    return [...scans, ...sorts];
  }
  return lines.filter((l) => {
    const m = /^(Seq Scan|Index Scan|Index Only Scan) (\w+)/.exec(l);
    if (!m || !big(m[2] as string)) return false;
    return m[1] === "Seq Scan" || !/\(/.test(l);
  });
}

const USERS = 20_000;

describeEachDialect("every list and filter route: query plans on a large analysed store", (env) => {
  let app: FastifyInstance;
  const recorder = new SelectRecorder();
  before(async () => {
    const e = env();
    // Both environments of acme hold the same large data, so that a plan reading another environment's rows
    // costs what it would in production.
    for (const envId of [e.acme.envs.production, e.acme.envs.development]) {
      await seedLargeEnvironment(
        e,
        envId,
        { users: USERS, tenants: 3, instances: 2_000 },
        { analyze: false },
      );
    }
    // API history of both organizations, a call a second.
    for (const org of [e.acme, e.globex]) {
      const series =
        e.dialect === "sqlite"
          ? sql`with recursive series(i) as (select 0 union all select i + 1 from series where i + 1 < 20000)`
          : sql`with series(i) as (select generate_series(0, 19999))`;
      const at =
        e.dialect === "sqlite"
          ? sql`strftime('%Y-%m-%dT%H:%M:%f+00:00', 1767225600 + i, 'unixepoch')`
          : sql`to_char(timestamp '2026-01-01' + i * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"')`;
      const id = e.dialect === "sqlite" ? sql`lower(hex(randomblob(16)))` : sql`gen_random_uuid()::text`;
      await sql`${series} insert into api_log (id, organization_id, project_id, project_key, environment_id,
        environment_key, timestamp, method, path, query, status, success, duration_ms, client_ip, request_id,
        actor_type, actor_id, actor_display_name, request_body, response_body)
        select ${id}, ${org.id}, ${org.projectId}, 'default', ${org.envs.production}, 'production', ${at},
          'GET', '/v2/facts/users', null, 200, 1, 1.5, '127.0.0.1', null, 'api_key', ${org.adminKeyId}, 'admin',
          null, null from series`.execute(e.store.db);
    }
    await analyzeTables(e);
    // The same app over the same database, its statements recorded; its lists read on the main connection (no
    // SQLite file named), which runs the very statements the list reader would.
    app = await buildTestApp(
      { ...e.store, db: e.store.db.withPlugin(recorder), sqliteFile: undefined },
      e.box,
    );
  });
  after(async () => {
    await app?.close();
  });

  test("no full scan, and no sort where an index gives the order", async () => {
    const e = env();
    const F = factsUrl(e.acme);
    const S = `/v2/schema/${e.acme.projectId}/${e.acme.envs.production}`;
    const P = `/v2/pdps/${e.acme.projectId}/${e.acme.envs.production}`;
    const deep = `page=${USERS / 20 - 10}&per_page=20`;
    const routes = [
      `${F}/users?${deep}`,
      `${F}/users?page=1&per_page=20`,
      `${F}/users?page=3&search=user19`,
      `${F}/users?${deep}&role=member`,
      `${F}/users?page=2&role=`,
      `${F}/users?page=2&role=reader&include_resource_instance_roles=true`,
      `${F}/tenants?page=1&include_total_count=true`,
      `${F}/tenants?search=t-1&include_total_count=true`,
      `${F}/tenants/t-0/users?page=300&per_page=20`,
      `${F}/tenants/t-0/users?page=3&search=First1`,
      `${F}/tenants/t-0/users?page=3&role=member`,
      `${F}/tenants/t-0/users?page=3&role=reader&include_resource_instance_roles=true`,
      `${F}/role_assignments?page=300&include_total_count=true`,
      `${F}/role_assignments?user=u-5&include_total_count=true`,
      `${F}/role_assignments?page=30&role=member&include_total_count=true`,
      `${F}/role_assignments?page=30&tenant=t-0&include_total_count=true`,
      `${F}/role_assignments?resource_instance=doc:d-5&include_total_count=true`,
      `${F}/role_assignments?page=3&resource=doc&include_total_count=true`,
      `${F}/role_assignments?user=u-30&tenant=t-0&detailed=true&include_total_count=true`,
      `${F}/role_assignments/detailed?page=30&tenant=t-1`,
      `${F}/resource_instances?page=50&include_total_count=true`,
      `${F}/resource_instances?page=5&tenant=t-1&include_total_count=true`,
      `${F}/resource_instances?page=5&resource=doc&include_total_count=true`,
      `${F}/resource_instances?search=d-7&include_total_count=true`,
      `${F}/resource_instances/detailed?page=5&tenant=t-2`,
      `${F}/relationship_tuples?page=50&include_total_count=true`,
      `${F}/relationship_tuples?tenant=t-1&page=5&include_total_count=true`,
      `${F}/relationship_tuples?subject=doc:d-7&include_total_count=true`,
      `${F}/relationship_tuples?object=doc:d-8&include_total_count=true`,
      `${F}/relationship_tuples?relation=parent&page=5&include_total_count=true`,
      `${F}/relationship_tuples?subject_type=doc&object_type=doc&page=5&include_total_count=true`,
      `${F}/relationship_tuples/detailed?page=5&tenant=t-2`,
      `${F}/set_rules`,
      `${S}/resources?include_total_count=true`,
      `${S}/resources?search=doc&include_total_count=true`,
      `${S}/resources/doc/roles`,
      `${S}/resources/doc/relations`,
      `${S}/resources/doc/actions`,
      `${S}/roles?include_total_count=true`,
      `${S}/roles?search=mem&include_total_count=true`,
      `${S}/condition_sets?include_total_count=true&type=userset`,
      `${S}/users/attributes`,
      `/v2/api-key?page=1`,
      `/v2/api-key?proj_id=${e.acme.projectId}`,
      `/v2/projects`,
      `/v2/projects/${e.acme.projectId}/envs`,
      `/v2/members`,
      `/v2/history?page=1&per_page=20`,
      `/v2/history?page=1&method=GET&status_code=200&env_id=${e.acme.envs.production}`,
      `/v2/history/stats`,
      `${P}/audit_logs?page=1`,
      `${P}/audit_logs?users=u-1&decision=true`,
    ];
    // Every tuple of the seed is doc -> doc, so this filter selects them all: reading a whole index is then a fair
    // plan, which PostgreSQL picks or not by its statistics' sample. SQLite's plan is still judged.
    const unselective = `${F}/relationship_tuples?subject_type=doc&object_type=doc&page=5&include_total_count=true`;
    const found: string[] = [];
    for (const url of routes) {
      if (e.dialect === "postgres" && url === unselective) continue;
      recorder.nodes.length = 0;
      const res = await app.inject({
        method: "GET",
        url,
        headers: { authorization: `Bearer ${e.acme.adminKey}` },
      });
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
      const executor = e.store.db.getExecutor();
      for (const node of recorder.nodes) {
        const compiled = executor.compileQuery(node, { queryId: "plan" });
        // A statement prepared once with placeholder values (the key lookup) is not run as it is compiled here.
        if (compiled.parameters.some((v) => typeof v === "string" && v.includes("\u0000"))) continue;
        let lines: string[];
        try {
          lines = await planLines(e, compiled);
        } catch (error) {
          found.push(
            `${url}\n  ${compiled.sql}\n  ${JSON.stringify(compiled.parameters)}\n  ${String(error)}`,
          );
          continue;
        }
        const bad = problems(e.dialect, compiled.sql, lines);
        if (bad.length > 0) found.push(`${url}\n  ${compiled.sql}\n  ${lines.join("\n  ")}`);
      }
    }
    assert.deepEqual(found, [], found.join("\n\n"));
  });
});
