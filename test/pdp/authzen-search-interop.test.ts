import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { describeEachDialect } from "../helpers/app.ts";
import { post, startTestPdp, type TestPdp } from "../helpers/pdp.ts";

// The OpenID AuthZEN search interop (test/fixtures/authzen/README.md): six users, twenty records and an attribute
// policy, modelled through the public /v2 API; every subject, resource and action search vector goes to the PDP
// over real HTTP, judged as the interop runner judges (results sorted, then compared as JSON) and on the whole
// body (nothing but `results`).

type Item = { type: string; id: string } | { name: string };
interface Vector {
  request: Record<string, unknown>;
  expected: { results: Item[] };
}
const fixture = <T>(name: string): T =>
  JSON.parse(readFileSync(new URL(`../fixtures/authzen/${name}`, import.meta.url), "utf8")) as T;
const users = fixture<{ id: string; role: string; department: string }[]>("search-users.json");
const records =
  fixture<{ id: number; title: string; department: string; owner: string }[]>("search-records.json");

/** runner.ts's order: by type then id, or by name (localeCompare). */
const sortResults = (items: Item[]) =>
  [...items].sort((a, b) =>
    "type" in a && "type" in b
      ? a.type !== b.type
        ? a.type.localeCompare(b.type)
        : a.id.localeCompare(b.id)
      : (a as { name: string }).name.localeCompare((b as { name: string }).name),
  );

const urlOf = (app: FastifyInstance) => `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

describeEachDialect("AuthZEN: the interop search vectors over HTTP", (env) => {
  let pdp: TestPdp;
  let api = "";
  let pdpUrl = "";
  let key = "";
  const S = "/v2/schema/default/production";
  const F = "/v2/facts/default/production";
  const write = async (url: string, body: unknown) => {
    const res = await post(`${api}${url}`, key, body);
    assert.ok(res.status >= 200 && res.status < 300, `${url} -> ${res.status} ${JSON.stringify(res.json)}`);
  };

  before(async () => {
    const { acme, call, app } = env();
    key = (await call(acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    await app.listen({ port: 0, host: "127.0.0.1" });
    api = urlOf(app);
    pdp = await startTestPdp(env());
    pdpUrl = pdp.url;

    // The scenario's rules, all on attributes:
    //   anyone views and edits and deletes what they own, and views what is in their department;
    //   a manager views everything and edits what is in their department.
    await write(`${S}/resources`, {
      key: "record",
      name: "Record",
      actions: { view: {}, edit: {}, delete: {} },
      attributes: { department: { type: "string" }, owner: { type: "string" } },
    });
    const sets: [string, string, Record<string, unknown>][] = [
      ["everyone", "userset", {}],
      ["managers", "userset", { allOf: [{ "user.role": { equals: "manager" } }] }],
      ["all_records", "resourceset", {}],
      ["owned", "resourceset", { allOf: [{ "resource.owner": { equals: { ref: "user.key" } } }] }],
      [
        "same_department",
        "resourceset",
        { allOf: [{ "resource.department": { equals: { ref: "user.department" } } }] },
      ],
    ];
    for (const [setKey, type, conditions] of sets) {
      await write(`${S}/condition_sets`, {
        key: setKey,
        name: setKey,
        type,
        ...(type === "resourceset" && { resource_id: "record" }),
        conditions,
      });
    }
    const rules: [string, string, string][] = [
      ["everyone", "view", "owned"],
      ["everyone", "view", "same_department"],
      ["managers", "view", "all_records"],
      ["everyone", "edit", "owned"],
      ["managers", "edit", "same_department"],
      ["everyone", "delete", "owned"],
    ];
    for (const [userSet, action, resourceSet] of rules) {
      await write(`${F}/set_rules`, {
        user_set: userSet,
        permission: `record:${action}`,
        resource_set: resourceSet,
      });
    }
    for (const user of users) {
      await write(`${F}/users`, {
        key: user.id,
        attributes: { role: user.role, department: user.department },
      });
    }
    for (const record of records) {
      await write(`${F}/resource_instances`, {
        resource: "record",
        key: String(record.id),
        tenant: "default",
        attributes: { title: record.title, department: record.department, owner: record.owner },
      });
    }
  });

  after(async () => {
    await pdp?.close();
  });

  for (const [kind, count] of [
    ["subject", 60],
    ["resource", 18],
    ["action", 120],
  ] as const) {
    test(`every ${kind} search vector matches`, async () => {
      const { evaluation } = fixture<{ evaluation: Vector[] }>(`search-${kind}-results.json`);
      assert.equal(evaluation.length, count);
      const misses: string[] = [];
      for (const vector of evaluation) {
        const res = await post(`${pdpUrl}/access/v1/search/${kind}`, key, vector.request);
        const results = (res.json["results"] ?? []) as Item[];
        const runnerPass =
          JSON.stringify(sortResults(results)) === JSON.stringify(sortResults(vector.expected.results));
        const wholePass = res.status === 200 && Object.keys(res.json).join() === "results";
        if (!runnerPass || !wholePass) {
          misses.push(`${JSON.stringify(vector.request)} -> ${res.status} ${JSON.stringify(res.json)}`);
        }
      }
      assert.equal(
        misses.length,
        0,
        `${count - misses.length}/${count} match; first misses:\n${misses.slice(0, 5).join("\n")}`,
      );
    });
  }
});
