import { test } from "node:test";
import assert from "node:assert/strict";
import { createSetupToken } from "../../src/domain/setup-token-records.ts";
import { countMembers } from "../../src/domain/member-records.ts";
import { describeEachDialect } from "../helpers/app.ts";
import { addMember, anonymous, PASSWORD } from "../helpers/members.ts";

const setup = (app: Parameters<typeof anonymous>[0], token: string, email: string) =>
  anonymous(app, "POST", "/v2/auth/setup", { setup_token: token, email, password: PASSWORD });

describeEachDialect("the first start's setup links", (env) => {
  test("two links redeemed at once create one owner", async () => {
    const { app, store } = env();
    const tokens = [await createSetupToken(store.db), await createSetupToken(store.db)];
    const answers = await Promise.all(tokens.map((token, i) => setup(app, token, `owner${i}@first.test`)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 404]);
    assert.equal(await countMembers(store.db), 1);
  });

  test("a link redeems nothing once anyone is a member, however they came", async () => {
    const { app, store } = env();
    // members came in without insertMember (as an organization import writes them): the link still refuses
    const late = await createSetupToken(store.db);
    assert.ok((await countMembers(store.db)) > 0);
    assert.equal((await setup(app, late, "late@first.test")).status, 404);

    // a member added the ordinary way revokes every link, even if that member is gone again later
    await store.db.deleteFrom("member_grants").execute();
    await store.db.deleteFrom("sessions").execute();
    await store.db.deleteFrom("members").execute();
    const revoked = await createSetupToken(store.db);
    await addMember(store, "invited@first.test", []);
    await store.db.deleteFrom("members").execute();
    assert.equal((await setup(app, revoked, "after@first.test")).status, 404);
    assert.equal(await countMembers(store.db), 0);
  });
});
