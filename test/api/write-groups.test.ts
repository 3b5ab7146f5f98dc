import { test } from "node:test";
import assert from "node:assert/strict";
import { sql } from "kysely";
import { runWithWriteContext } from "../../src/changes/context.ts";
import { writeFacts, type Env } from "../../src/domain/facts/facts-write.ts";
import { createUserRecord } from "../../src/domain/facts/user-records.ts";
import { AppError } from "../../src/lib/errors.ts";
import { describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { readChangesAfter } from "../helpers/changes.ts";
import { factsUrl, revisionOf } from "../helpers/facts.ts";

/** Group commit of one environment's concurrent writes (src/changes/write-groups.ts). */
describeEachDialect("write groups", (env) => {
  const environment = async (t: TestEnv): Promise<Env> =>
    t.store.db
      .selectFrom("environments")
      .select(["id", "organization_id", "project_id"])
      .where("id", "=", t.acme.envs.production)
      .executeTakeFirstOrThrow();

  const userKeys = async (t: TestEnv, prefix: string): Promise<string[]> =>
    (
      await t.store.db
        .selectFrom("users")
        .select("key")
        .where("environment_id", "=", t.acme.envs.production)
        .where("key", "like", `${prefix}%`)
        .orderBy("key")
        .execute()
    ).map((r) => r.key);

  test("units queued behind a running one share its transaction; one failing after its insert changes nothing, the others commit with consecutive revisions", async () => {
    const t = env();
    const target = await environment(t);
    const before = await revisionOf(t, target.id);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const calls = Array.from({ length: 6 }, (_, i) => {
      const context = { revisions: new Map<string, number>() };
      const done = runWithWriteContext(context, () =>
        writeFacts(t.store.db, target, async (resolver, changes) => {
          // The first unit holds its lane until every other one has queued behind it.
          if (i === 0) await gate;
          await createUserRecord(resolver, { key: `group-${i}` }, changes);
          if (i === 3) throw new AppError("NOT_FOUND", "unit 3 fails after its insert");
          if (t.dialect !== "postgres") return "";
          const { rows } = await sql<{ xid: string }>`select txid_current()::text as xid`.execute(
            resolver.db,
          );
          return rows[0]?.xid ?? "";
        }),
      );
      return { context, done };
    });
    open();
    const settled = await Promise.allSettled(calls.map((c) => c.done));

    const failed = settled[3];
    assert.equal(failed?.status, "rejected");
    assert.ok(failed.reason instanceof AppError && failed.reason.code === "NOT_FOUND", String(failed.reason));
    const kept = [0, 1, 2, 4, 5];
    const results = kept.map((i) => {
      const outcome = settled[i];
      assert.equal(outcome?.status, "fulfilled", String(outcome?.status === "rejected" && outcome.reason));
      return outcome.value;
    });
    if (t.dialect === "postgres") assert.equal(new Set(results).size, 1, "one transaction for the group");

    // Each caller's own revision, in the order the units ran, gapless from the revision before.
    const revisions = kept.map((i) => calls[i]?.context.revisions.get(target.id));
    assert.deepEqual(
      revisions,
      kept.map((_, k) => before + k + 1),
    );
    assert.equal(await revisionOf(t, target.id), before + kept.length);
    assert.deepEqual(await userKeys(t, "group-"), ["group-0", "group-1", "group-2", "group-4", "group-5"]);
    const feed = await readChangesAfter(t.store.db, target.id, before, before + kept.length);
    assert.deepEqual(
      feed.map((c) => [c.revision, (c.data as { key: string }).key]),
      kept.map((i, k) => [before + k + 1, `group-${i}`]),
    );
  });

  test("concurrent creates over HTTP, one naming an unknown role: its 4xx as when sent alone, its user absent, the others 201 with gapless revisions", async () => {
    const t = env();
    const url = `${factsUrl(t.acme)}/users`;
    const failing = (key: string) => ({
      key,
      role_assignments: [{ role: "no-such-role", tenant: "default" }],
    });
    const alone = await t.call(t.acme.adminKey, "POST", url, failing("http-alone"));
    assert.ok(alone.status >= 400 && alone.status < 500, alone.body);

    const before = await revisionOf(t, t.acme.envs.production);
    const replies = await Promise.all(
      Array.from({ length: 9 }, (_, i) =>
        t.call(t.acme.adminKey, "POST", url, i === 4 ? failing(`http-${i}`) : { key: `http-${i}` }),
      ),
    );
    const bad = replies[4];
    assert.equal(bad?.status, alone.status);
    assert.equal(bad.json.error_code, alone.json.error_code);
    const good = replies.filter((_, i) => i !== 4);
    assert.deepEqual(
      good.map((r) => r.status),
      good.map(() => 201),
    );
    const revisions = good.map((r) => Number(r.headers["x-gatehouse-revision"])).sort((a, b) => a - b);
    assert.deepEqual(
      revisions,
      good.map((_, k) => before + k + 1),
    );
    assert.equal(await revisionOf(t, t.acme.envs.production), before + good.length);
    assert.deepEqual(await userKeys(t, "http-"), [
      "http-0",
      "http-1",
      "http-2",
      "http-3",
      "http-5",
      "http-6",
      "http-7",
      "http-8",
    ]);
  });
});
