import { test } from "node:test";
import assert from "node:assert/strict";
import { createOrganizationRecords } from "../../src/domain/organization-records.ts";
import { countOrgAdmins } from "../../src/domain/member-records.ts";
import { countOrgAdminKeys } from "../../src/modules/api-keys/api-keys.repo.ts";
import { describeEachDialect } from "../helpers/app.ts";
import { addMember, asMember, login } from "../helpers/members.ts";

/** Organizations raced at once: on PostgreSQL without the organization's lock, most of them lost every admin. */
const ORGS = 12;

describeEachDialect("the last admin under concurrent removals", (env) => {
  test("two admins removing each other, two admin keys deleting each other: one admin of each is left", async () => {
    const { app, store, box, call } = env();
    const rounds = await Promise.all(
      Array.from({ length: ORGS }, async (_, i) => {
        const org = await createOrganizationRecords(store.db, box, { key: `race-${i}`, name: `Race ${i}` });
        const second = await call(org.adminKeySecret, "POST", "/v2/api-key", {
          object_type: "org",
          access_level: "admin",
          name: "second admin key",
        });
        assert.equal(second.status, 200, second.body);
        const a = await addMember(store, `a${i}@race.test`, [{ organizationId: org.organization.id }]);
        const b = await addMember(store, `b${i}@race.test`, [{ organizationId: org.organization.id }]);
        return {
          id: org.organization.id,
          keys: [
            { id: org.adminKeyId, secret: org.adminKeySecret as string },
            { id: second.json.id as string, secret: second.json.secret as string },
          ],
          members: [
            { id: a, session: await login(app, `a${i}@race.test`) },
            { id: b, session: await login(app, `b${i}@race.test`) },
          ],
        };
      }),
    );
    const answers = await Promise.all(
      rounds.flatMap(({ keys: [k1, k2], members: [m1, m2] }) => [
        call(k1!.secret, "DELETE", `/v2/api-key/${k2!.id}`),
        call(k2!.secret, "DELETE", `/v2/api-key/${k1!.id}`),
        asMember(app, m1!.session, "DELETE", `/v2/members/${m2!.id}`),
        asMember(app, m2!.session, "DELETE", `/v2/members/${m1!.id}`),
      ]),
    );
    for (const answer of answers) assert.ok(answer.status < 500, `${answer.status} ${answer.body}`);
    for (const round of rounds) {
      assert.equal(await countOrgAdmins(store.db, round.id), 1, "one admin member is left");
      assert.equal(await countOrgAdminKeys(store.db, round.id), 1, "one admin key is left");
    }
  });
});
