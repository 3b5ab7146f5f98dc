import { test, before } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import { addMember, PASSWORD } from "../helpers/members.ts";

let clock = Date.UTC(2030, 0, 1, 0, 0, 0);

describeEachDialect(
  "failed logins are limited per account and per client address",
  (env) => {
    before(async () => {
      const { store, acme } = env();
      await addMember(store, "target@acme.test", [{ organizationId: acme.id }]);
    });

    const attempt = (email: string, password: string, remoteAddress = "10.0.0.1") =>
      env().app.inject({
        method: "POST",
        url: "/v2/auth/login",
        payload: { email, password },
        remoteAddress,
      });

    test("per account: after 3 failures even the right password gets 429 with Retry-After, until the window ends", async () => {
      for (let i = 0; i < 3; i++)
        assert.equal((await attempt("target@acme.test", "wrong password!")).statusCode, 401);
      const limited = await attempt("target@acme.test", PASSWORD, "10.0.0.2");
      assert.equal(limited.statusCode, 429);
      assert.equal(limited.json().error_code, "TOO_MANY_REQUESTS");
      const retryAfter = Number(limited.headers["retry-after"]);
      assert.ok(retryAfter > 0 && retryAfter <= 900, String(retryAfter));
      // an unknown e-mail is limited the same way (the answers do not tell them apart)
      for (let i = 0; i < 3; i++) await attempt("ghost@acme.test", "wrong password!", "10.0.0.3");
      assert.equal((await attempt("ghost@acme.test", "wrong password!", "10.0.0.3")).statusCode, 429);
      clock += 15 * 60_000;
      assert.equal((await attempt("target@acme.test", PASSWORD, "10.0.0.2")).statusCode, 200);
    });

    test("per address: after 5 failures from one address, its logins get 429 whatever the e-mail", async () => {
      clock += 15 * 60_000;
      for (let i = 0; i < 5; i++) {
        assert.equal((await attempt(`spray${i}@acme.test`, "wrong password!", "10.9.9.9")).statusCode, 401);
      }
      const limited = await attempt("target@acme.test", PASSWORD, "10.9.9.9");
      assert.equal(limited.statusCode, 429);
      assert.ok(Number(limited.headers["retry-after"]) > 0);
      assert.equal(
        (await attempt("target@acme.test", PASSWORD, "10.9.9.8")).statusCode,
        200,
        "other addresses log in",
      );
    });
  },
  { loginFailuresPerAccount: 3, loginFailuresPerAddress: 5, clock: () => clock },
);
