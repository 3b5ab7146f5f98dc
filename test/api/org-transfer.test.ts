import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { addMember } from "../helpers/members.ts";
import { orgsCommand } from "../../src/cli/orgs.ts";
import { ConfigError } from "../../src/config.ts";
import { openStore } from "../../src/db/store.ts";
import { createOrganizationRecords } from "../../src/domain/organization-records.ts";
import { packed, toLogRow } from "../../src/domain/api-log-writer.ts";

/**
 * `gatehouse orgs export/import/delete/freeze` (issue 36 items 1-3): an import trusts nothing in its file, refuses
 * a file without its trailer and changes nothing when it refuses; a frozen organization takes no writes; delete
 * refuses an organization changed since its export.
 */
describeEachDialect(
  "organization move",
  (env: () => TestEnv) => {
    let dir = "";
    /** The export of organization `initech` (a user, a tenant, an assignment), deleted from the database since. */
    let exported = "";
    let initechId = "";
    const printed: string[] = [];

    const run = (args: string[], vars: Record<string, string> = {}) =>
      orgsCommand(
        args,
        {
          openStore: () => openStore(env().store.location),
          loadSecretBox: () => env().box,
          print: (line) => printed.push(line),
        },
        vars,
      );
    /** Runs and expects a refusal (exit 2 in the CLI) whose message matches `message`. */
    const refused = async (args: string[], message: RegExp, vars: Record<string, string> = {}) => {
      await assert.rejects(run(args, vars), (e: Error) => {
        assert.ok(e instanceof ConfigError, `${e.constructor.name}: ${e.message}`);
        assert.match(e.message, message);
        return true;
      });
    };
    const fileOf = (name: string, text: string) => {
      const file = path.join(dir, name);
      fs.writeFileSync(file, text);
      return file;
    };
    const linesOf = (text: string) => text.split("\n").filter((l) => l !== "");
    /** The file's lines with a trailer computed anew, as a forger who knows the format would write it. */
    const resigned = (lines: string[]) => {
      const body = lines.filter((l) => !JSON.parse(l).trailer);
      const counts: Record<string, number> = {};
      for (const l of body.slice(1)) {
        const table = JSON.parse(l).table as string;
        counts[table] = (counts[table] ?? 0) + 1;
      }
      const text = body.map((l) => `${l}\n`).join("");
      const sha256 = crypto.createHash("sha256").update(text).digest("hex");
      return `${text}${JSON.stringify({ trailer: { lines: body.length, counts, sha256 } })}\n`;
    };
    /** Every row of the database, per table, so a refused import can be shown to have changed nothing. */
    const snapshot = async () => {
      const db = env().store.db;
      const out: Record<string, number> = {};
      for (const t of [
        "organizations",
        "members",
        "member_grants",
        "api_keys",
        "users",
        "tenants",
        "projects",
      ])
        out[t] = Number(
          (
            await db
              .selectFrom(t as "users")
              .select((eb) => eb.fn.countAll().as("n"))
              .executeTakeFirstOrThrow()
          ).n,
        );
      return out;
    };

    const ok2xx = (r: { status: number; body: string }) =>
      assert.ok(r.status >= 200 && r.status < 300, r.body);

    before(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "org-move-"));
      const { store, box, call } = env();
      const created = await createOrganizationRecords(store.db, box, { key: "initech", name: "Initech" });
      initechId = created.organization.id;
      await addMember(store, "peter@initech.test", [{ organizationId: initechId }]);
      const F = "/v2/facts/default/production";
      const key = created.adminKeySecret;
      ok2xx(
        await call(key, "POST", `/v2/schema/default/production/resources`, {
          key: "doc",
          name: "Doc",
          actions: { read: {} },
        }),
      );
      ok2xx(
        await call(key, "POST", `/v2/schema/default/production/roles`, {
          key: "reader",
          name: "Reader",
          permissions: ["doc:read"],
        }),
      );
      ok2xx(await call(key, "POST", `${F}/users`, { key: "milton", first_name: "Milton" }));
      ok2xx(await call(key, "POST", `${F}/tenants`, { key: "basement", name: "Basement" }));
      ok2xx(await call(key, "POST", `${F}/users/milton/roles`, { role: "reader", tenant: "basement" }));
      const file = path.join(dir, "initech.jsonl");
      assert.equal(await run(["export", "--org", "initech", "--to", "us", "--file", file]), 0);
      exported = fs.readFileSync(file, "utf8");
      assert.equal(await run(["delete", "--org", "initech", "--confirm", "initech"]), 0);
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    test("the export ends with a trailer: its lines, rows per table and the SHA-256 of what precedes it", () => {
      const lines = linesOf(exported);
      const trailer = JSON.parse(lines.at(-1) as string).trailer;
      assert.ok(trailer, "the last line is the trailer");
      assert.equal(trailer.lines, lines.length - 1);
      assert.equal(trailer.counts.users, 1);
      const body = lines
        .slice(0, -1)
        .map((l) => `${l}\n`)
        .join("");
      assert.equal(trailer.sha256, crypto.createHash("sha256").update(body).digest("hex"));
    });

    test("rows of another organization are refused, naming the line; nothing changes in it", async () => {
      const { acme } = env();
      const lines = linesOf(exported);
      const grant = lines.find((l) => JSON.parse(l).table === "member_grants") as string;
      const userLine = lines.find((l) => JSON.parse(l).table === "users") as string;
      const keyLine = lines.find((l) => JSON.parse(l).table === "api_keys") as string;
      const before = await snapshot();
      const forgeries: [string, (row: Record<string, unknown>) => Record<string, unknown>, string][] = [
        // a key of the victim organization (whose secret the import would print)
        [
          keyLine,
          (r) => ({
            ...r,
            id: crypto.randomUUID(),
            organization_id: acme.id,
            project_id: null,
            environment_id: null,
          }),
          "api_keys",
        ],
        // a user in the victim's environment, with the header's organization id
        [
          userLine,
          (r) => ({
            ...r,
            id: crypto.randomUUID(),
            project_id: acme.projectId,
            environment_id: acme.envs.production,
          }),
          "users",
        ],
        // a user whose organization id is the victim's
        [
          userLine,
          (r) => ({
            ...r,
            id: crypto.randomUUID(),
            organization_id: acme.id,
            project_id: acme.projectId,
            environment_id: acme.envs.production,
          }),
          "users",
        ],
        // an id that already exists (acme's admin key)
        [keyLine, (r) => ({ ...r, id: acme.adminKeyId }), "api_keys"],
      ];
      if (grant) {
        // a grant on the victim organization for the file's member
        forgeries.push([
          grant,
          (r) => ({ ...r, id: crypto.randomUUID(), organization_id: acme.id }),
          "member_grants",
        ]);
      }
      for (const [i, [line, forge, table]] of forgeries.entries()) {
        const parsed = JSON.parse(line);
        const at = lines.indexOf(line) + 1;
        const forged = [
          ...lines.slice(0, at),
          JSON.stringify({ table, row: forge(parsed.row) }),
          ...lines.slice(at),
        ];
        const file = fileOf(`forged-${i}.jsonl`, resigned(forged));
        await refused(["import", "--file", file], new RegExp(`line ${at + 1}: ${table}`));
        assert.deepEqual(await snapshot(), before, `forgery ${i} changed nothing`);
      }
    });

    test("a value the API would refuse is refused (a 1 MB first name)", async () => {
      const lines = linesOf(exported).map((l) => {
        const parsed = JSON.parse(l);
        if (parsed.table !== "users") return l;
        return JSON.stringify({ ...parsed, row: { ...parsed.row, first_name: "M".repeat(1024 * 1024) } });
      });
      const before = await snapshot();
      await refused(
        ["import", "--file", fileOf("big.jsonl", resigned(lines))],
        /line \d+: users: first_name/,
      );
      assert.deepEqual(await snapshot(), before);
    });

    test("a header naming another region is refused", async () => {
      const lines = linesOf(exported);
      const header = JSON.parse(lines[0] as string);
      const mars = [JSON.stringify({ ...header, region: "mars" }), ...lines.slice(1)];
      await refused(["import", "--file", fileOf("mars.jsonl", resigned(mars))], /line 1: .*region 'mars'/);
    });

    test("a file cut at a line boundary, a header alone, or a cut inside a line is refused with its line", async () => {
      const lines = linesOf(exported);
      const before = await snapshot();
      const half = lines.slice(0, Math.ceil(lines.length / 2));
      await refused(
        ["import", "--file", fileOf("half.jsonl", half.map((l) => `${l}\n`).join(""))],
        /trailer/,
      );
      await refused(["import", "--file", fileOf("header.jsonl", `${lines[0]}\n`)], /trailer/);
      const cut = exported.slice(0, exported.indexOf("\n", exported.length / 2) - 7);
      const cutLine = cut.split("\n").length;
      await refused(
        ["import", "--file", fileOf("cut.jsonl", cut)],
        new RegExp(`^line ${cutLine}: not valid JSON`),
      );
      // a line changed after the export: the checksum differs
      const edited = lines.map((l) => l.replace('"Milton"', '"Milt0n"'));
      await refused(
        ["import", "--file", fileOf("edited.jsonl", edited.map((l) => `${l}\n`).join(""))],
        /checksum/,
      );
      assert.deepEqual(await snapshot(), before, "nothing of the refused files stayed");
      // then the whole file imports
      assert.equal(await run(["import", "--file", fileOf("whole.jsonl", exported)]), 0);
      const user = await env()
        .store.db.selectFrom("users")
        .select(["first_name"])
        .where("organization_id", "=", initechId)
        .execute();
      assert.deepEqual(user, [{ first_name: "Milton" }]);
    });

    test("a frozen organization answers writes with 423 naming the move; reads keep working", async () => {
      const { acme, call } = env();
      const F = "/v2/facts/default/production";
      assert.equal(await run(["freeze", "--org", "acme"]), 0);
      try {
        const write = await call(acme.adminKey, "POST", `${F}/users`, { key: "frozen-out" });
        assert.equal(write.status, 423, write.body);
        assert.equal(write.json.error_code, "ORGANIZATION_FROZEN");
        assert.match(write.json.message, /organization 'acme' is frozen for a move/);
        const key = await call(acme.adminKey, "POST", "/v2/api-key", {
          object_type: "org",
          access_level: "read",
        });
        assert.equal(key.status, 423, key.body);
        assert.equal((await call(acme.adminKey, "GET", `${F}/users`)).status, 200);
        assert.equal((await call(acme.adminKey, "GET", "/v2/orgs/active/org")).status, 200);
        // another organization is not frozen
        assert.equal((await call(env().globex.adminKey, "POST", `${F}/users`, { key: "free" })).status, 201);
      } finally {
        assert.equal(await run(["unfreeze", "--org", "acme"]), 0);
      }
      assert.equal((await call(acme.adminKey, "POST", `${F}/users`, { key: "thawed" })).status, 201);
    });

    test("delete refuses an organization changed since its last export, unless forced", async () => {
      const { globex, call } = env();
      await refused(["delete", "--org", "globex", "--confirm", "globex"], /never exported/);
      const file = path.join(dir, "globex.jsonl");
      assert.equal(await run(["export", "--org", "globex", "--to", "us", "--file", file]), 0);
      // reads after the export are no change
      assert.equal((await call(globex.adminKey, "GET", "/v2/facts/default/production/users")).status, 200);
      assert.equal(
        (await call(globex.adminKey, "POST", "/v2/facts/default/production/users", { key: "late" })).status,
        201,
      );
      await refused(["delete", "--org", "globex", "--confirm", "globex"], /changed since its export/);
      assert.ok(
        await env()
          .store.db.selectFrom("organizations")
          .select("id")
          .where("id", "=", globex.id)
          .executeTakeFirst(),
      );
      assert.equal(await run(["delete", "--org", "globex", "--confirm", "globex", "--force"]), 0);
      assert.equal(
        await env()
          .store.db.selectFrom("organizations")
          .select("id")
          .where("id", "=", globex.id)
          .executeTakeFirst(),
        undefined,
      );
    });

    test("an API log record whose response is stored compressed travels as text, and delete removes it", async () => {
      const { store, box } = env();
      const { organization } = await createOrganizationRecords(store.db, box, { key: "umbrella", name: "U" });
      const response = JSON.stringify({
        data: Array.from({ length: 300 }, (_, i) => ({ key: `user-${i}` })),
      });
      const row = toLogRow(
        {
          id: crypto.randomUUID(),
          requestId: "req-1",
          timestamp: "2026-01-01T00:00:00.000+00:00",
          method: "GET",
          url: "/v2/facts/default/production/users",
          status: 200,
          durationMs: 1,
          clientIp: "127.0.0.1",
          principal: null,
          projectRef: undefined,
          envRef: undefined,
          requestBody: undefined,
          responseBody: response,
          bearer: undefined,
        },
        { project: null, environment: null },
        65536,
      );
      const stored = await packed({ ...row, organization_id: organization.id });
      assert.ok(stored.response_body_gzip, "stored compressed");
      await store.db.insertInto("api_log").values(stored).execute();
      const file = path.join(dir, "umbrella.jsonl");
      assert.equal(await run(["export", "--org", "umbrella", "--to", "us", "--file", file]), 0);
      const logged = linesOf(fs.readFileSync(file, "utf8"))
        .map((l) => JSON.parse(l) as { table?: string; row: Record<string, unknown> })
        .filter((l) => l.table === "api_log");
      assert.equal(logged.length, 1);
      assert.equal(logged[0]?.row["response_body"], response);
      assert.ok(!("response_body_gzip" in (logged[0]?.row ?? {})));

      assert.equal(await run(["delete", "--org", "umbrella", "--confirm", "umbrella"]), 0);
      const left = () =>
        store.db
          .selectFrom("api_log")
          .select(["response_body"])
          .where("organization_id", "=", organization.id);
      assert.deepEqual(await left().execute(), []);
      assert.equal(await run(["import", "--file", file]), 0);
      assert.deepEqual(await left().execute(), [{ response_body: response }]);
      assert.equal(await run(["delete", "--org", "umbrella", "--confirm", "umbrella", "--force"]), 0);
    });

    test("an export pages every table by seeking on its key: rows across pages, none twice, in key order", async () => {
      const { store, box } = env();
      const { organization } = await createOrganizationRecords(store.db, box, {
        key: "hooli",
        name: "Hooli",
      });
      const { id: environmentId } = await store.db
        .selectFrom("environments")
        .select("id")
        .where("organization_id", "=", organization.id)
        .executeTakeFirstOrThrow();
      // 2,300 change rows (two per revision, so pages end between rows that share their revision): a table
      // ordered by three columns, read in three pages of 1,000.
      const rows = Array.from({ length: 2300 }, (_, i) => ({
        environment_id: environmentId,
        revision: 1_000 + Math.floor(i / 2),
        seq: i % 2,
        kind: "user",
        op: "upsert",
        data: "{}",
        created_at: "2026-01-01T00:00:00.000Z",
      }));
      for (let i = 0; i < rows.length; i += 500)
        await store.db
          .insertInto("changes")
          .values(rows.slice(i, i + 500))
          .execute();
      const file = path.join(dir, "hooli.jsonl");
      assert.equal(await run(["export", "--org", "hooli", "--to", "us", "--file", file]), 0);
      const changes = linesOf(fs.readFileSync(file, "utf8"))
        .map((l) => JSON.parse(l) as { table?: string; row: { revision: number; seq: number } })
        .filter((l) => l.table === "changes")
        .map((l) => `${Number(l.row.revision)}.${l.row.seq}`);
      const stored = await store.db
        .selectFrom("changes")
        .innerJoin("environments", "environments.id", "changes.environment_id")
        .select(["changes.revision", "changes.seq"])
        .where("environments.organization_id", "=", organization.id)
        .orderBy("changes.environment_id")
        .orderBy("changes.revision")
        .orderBy("changes.seq")
        .execute();
      assert.ok(stored.length > 2300);
      assert.deepEqual(
        changes,
        stored.map((r) => `${Number(r.revision)}.${r.seq}`),
      );
      assert.equal(await run(["delete", "--org", "hooli", "--confirm", "hooli"]), 0);
    });
  },
  // The command runs in this process beside the app: the app's API log writer, blocking this thread while it waits for
  // SQLite's lock held by the command's thread, would stall both for its busy timeout. Flushed at close instead.
  { apiLogFlushMs: 3_600_000 },
);
