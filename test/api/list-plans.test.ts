import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import {
  CompiledQuery,
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

/**
 * What no list may do on a large store: read a whole table or a whole index (SQLite `SCAN`, PostgreSQL a
 * sequential scan or an index scan without a condition), or, on SQLite, sort the rows it read for the page's order
 * (`USE TEMP B-TREE FOR ORDER BY`) where the list's index gives that order. The small lookups of a request (its
 * key, its project and environment) are held to the same rule.
 */
function problems(dialect: string, lines: string[]): string[] {
  if (dialect === "sqlite") {
    return lines.filter(
      (l) => (/^SCAN /.test(l) && !/^SCAN CONSTANT/.test(l)) || /TEMP B-TREE FOR ORDER BY/.test(l),
    );
  }
  return lines.filter((l) => /^Seq Scan /.test(l) || (/^(Index|Index Only) Scan /.test(l) && !/\(/.test(l)));
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
    // Some API history and decision log rows of both organizations.
    for (const org of [e.acme, e.globex]) {
      for (let i = 0; i < 20; i++) await e.call(org.adminKey, "GET", `${factsUrl(org)}/users?page=${i + 1}`);
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
    const found: string[] = [];
    for (const url of routes) {
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
        const lines = await planLines(e, compiled);
        const bad = problems(e.dialect, lines);
        if (bad.length > 0) found.push(`${url}\n  ${compiled.sql}\n  ${lines.join("\n  ")}`);
      }
    }
    assert.deepEqual(found, [], found.join("\n\n"));
  });
});
