import { test } from "node:test";
import assert from "node:assert/strict";
import { createSession, sessionPrincipal } from "../../src/domain/session-records.ts";
import { describeEachDialect } from "../helpers/app.ts";
import { addMember } from "../helpers/members.ts";

describeEachDialect("session renewal", (env) => {
  test("a session used more often than its idle window never lapses; one left alone does", async () => {
    const { store, acme } = env();
    const member = await addMember(store, "idle@acme.test", [{ organizationId: acme.id }]);
    const lifetime = { idleMs: 60_000, maxMs: 3_600_000 };
    const start = Date.UTC(2031, 0, 1);
    const used = await createSession(store.db, member, acme.id, lifetime, start);
    const left = await createSession(store.db, member, acme.id, lifetime, start);
    // used every 20 s of a 60 s window, for 5 minutes
    for (let at = start + 20_000; at <= start + 300_000; at += 20_000) {
      assert.ok(
        await sessionPrincipal(store.db, used.token, lifetime, at),
        `lapsed at +${(at - start) / 1000} s`,
      );
    }
    assert.equal(await sessionPrincipal(store.db, left.token, lifetime, start + 61_000), null);
  });
});
