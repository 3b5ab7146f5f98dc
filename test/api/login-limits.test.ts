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

    test("per account: 3 failures lock the account for the addresses that failed, not for the member elsewhere", async () => {
      for (let i = 0; i < 3; i++)
        assert.equal((await attempt("target@acme.test", "wrong password!")).statusCode, 401);
      const limited = await attempt("target@acme.test", PASSWORD);
      assert.equal(limited.statusCode, 429, "even the right password, from the address that guessed");
      assert.equal(limited.json().error_code, "TOO_MANY_REQUESTS");
      const retryAfter = Number(limited.headers["retry-after"]);
      assert.ok(retryAfter > 0 && retryAfter <= 900, String(retryAfter));
      // a guesser moving to another address gets one try there, then that address is locked out of the account too
      assert.equal((await attempt("target@acme.test", "wrong password!", "10.0.0.4")).statusCode, 401);
      assert.equal((await attempt("target@acme.test", "wrong password!", "10.0.0.4")).statusCode, 429);
      // the member, from an address that never failed on the account, logs in
      assert.equal((await attempt("target@acme.test", PASSWORD, "10.0.0.2")).statusCode, 200);
      // an unknown e-mail is limited the same way (the answers do not tell them apart)
      for (let i = 0; i < 3; i++) await attempt("ghost@acme.test", "wrong password!", "10.0.0.3");
      assert.equal((await attempt("ghost@acme.test", "wrong password!", "10.0.0.3")).statusCode, 429);
      clock += 15 * 60_000;
      assert.equal((await attempt("target@acme.test", PASSWORD)).statusCode, 200, "the window ended");
    });

    test("accounts guessed from one address: that address is locked, the accounts are not", async () => {
      clock += 15 * 60_000;
      const victims = ["victim0@acme.test", "victim1@acme.test"];
      for (const [i, email] of victims.entries()) {
        await addMember(env().store, email, [{ organizationId: env().acme.id }]);
        // 3 (the account's limit) and 2: 5 failures, the address's limit
        for (let j = 0; j < 3 - i; j++)
          assert.equal((await attempt(email, "wrong password!", "10.6.6.6")).statusCode, 401);
      }
      assert.equal((await attempt(victims[1]!, PASSWORD, "10.6.6.6")).statusCode, 429);
      for (const email of victims) assert.equal((await attempt(email, PASSWORD, "10.0.0.7")).statusCode, 200);
    });

    test("setup and invite codes: an address that keeps guessing them gets 429", async () => {
      for (const [url, body] of [
        ["/v2/auth/setup", { setup_token: "guess", email: "x@acme.test", password: PASSWORD }],
        ["/v2/auth/invites/accept", { invite_code: "guess", password: PASSWORD }],
      ] as const) {
        const guess = () =>
          env().app.inject({ method: "POST", url, payload: body, remoteAddress: "10.5.5.5" });
        for (let i = 0; i < 3; i++) assert.equal((await guess()).statusCode, 404, url);
        assert.equal((await guess()).statusCode, 429, url);
        const elsewhere = await env().app.inject({
          method: "POST",
          url,
          payload: body,
          remoteAddress: "10.5.5.6",
        });
        assert.equal(elsewhere.statusCode, 404, `${url}: other addresses are not limited`);
      }
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
