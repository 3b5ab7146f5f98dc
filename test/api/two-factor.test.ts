import { before, test } from "node:test";
import assert from "node:assert/strict";
import { TOTP } from "otpauth";
import { describeEachDialect } from "../helpers/app.ts";
import { addMember, anonymous, asMember, login, PASSWORD, type Session } from "../helpers/members.ts";
import { totpOf } from "../../src/domain/two-factor-records.ts";

// The second factor of password logins: enrolment, codes at login (each once), recovery codes (each once), wrong
// codes counted as failed logins, an organization that requires one, and nothing secret in the API log.

/** The rate limiter's clock: moved on past the failed-login window where a test starts afresh. */
let clock = Date.UTC(2030, 0, 1);

describeEachDialect(
  "a TOTP second factor for password logins",
  (env) => {
    let session: Session;
    let secret = "";
    let recovery: string[] = [];
    /** The code of a time step from now (0: the current one). */
    const code = (step = 0) => totpOf(secret, "").generate({ timestamp: Date.now() + step * 30_000 });
    const attempt = (body: Record<string, unknown>, remoteAddress = "10.1.0.1") =>
      env().app.inject({
        method: "POST",
        url: "/v2/auth/login",
        payload: { email: "ada@acme.test", password: PASSWORD, ...body },
        remoteAddress,
      });

    before(async () => {
      const { store, acme } = env();
      await addMember(store, "ada@acme.test", [{ organizationId: acme.id }]);
      await addMember(store, "bob@acme.test", [{ organizationId: acme.id, access: "write" }]);
      session = await login(env().app, "ada@acme.test");
    });

    test("enrol: a secret and its QR code; a wrong code does not confirm, the right one gives ten recovery codes", async () => {
      const app = env().app;
      const enrol = await asMember(app, session, "POST", "/v2/auth/two-factor/enrol");
      assert.equal(enrol.status, 200, enrol.body);
      secret = enrol.json.secret;
      assert.match(enrol.json.qr_code, /^data:image\/png;base64,/);
      assert.match(enrol.json.otpauth_url, /^otpauth:\/\/totp\/Gatehouse:ada%40acme\.test\?/);
      assert.equal((await attempt({})).statusCode, 200, "an unconfirmed factor does not count yet");
      const wrong = await asMember(app, session, "POST", "/v2/auth/two-factor/confirm", {
        totp_code: "000000",
      });
      assert.equal(wrong.status, 401);
      assert.equal(wrong.json.error_code, "INVALID_TWO_FACTOR_CODE");
      const confirmed = await asMember(app, session, "POST", "/v2/auth/two-factor/confirm", {
        totp_code: code(),
      });
      assert.equal(confirmed.status, 200, confirmed.body);
      recovery = confirmed.json.recovery_codes;
      assert.equal(recovery.length, 10);
      assert.equal(new Set(recovery).size, 10);
      const state = await asMember(app, session, "GET", "/v2/auth/two-factor");
      assert.deepEqual(state.json, { enabled: true, required: false, recovery_remaining: 10 });
      const again = await asMember(app, session, "POST", "/v2/auth/two-factor/enrol");
      assert.equal(again.status, 409);
    });

    test("login: the password alone asks for the code; a code works once; a recovery code works once", async () => {
      const bare = await attempt({});
      assert.equal(bare.statusCode, 401);
      assert.equal(bare.json().error_code, "TWO_FACTOR_REQUIRED");
      // the step after this one: the code of the current step was used to confirm
      const next = code(1);
      assert.equal((await attempt({ totp_code: next })).statusCode, 200);
      const replay = await attempt({ totp_code: next }, "10.1.0.2");
      assert.equal(replay.statusCode, 401, "a code is accepted once");
      assert.equal(replay.json().error_code, "INVALID_TWO_FACTOR_CODE");
      assert.equal(
        (await attempt({ recovery_code: recovery[0]!.toUpperCase() }, "10.1.0.3")).statusCode,
        200,
      );
      const reused = await attempt({ recovery_code: recovery[0] }, "10.1.0.3");
      assert.equal(reused.statusCode, 401, "a recovery code is used once");
      const wrongPassword = await attempt({ password: "not the password!", totp_code: code() }, "10.1.0.4");
      assert.equal(
        wrongPassword.json().error_code,
        "INVALID_CREDENTIALS",
        "the code does not stand for the password",
      );
      const state = await asMember(env().app, session, "GET", "/v2/auth/two-factor");
      assert.equal(state.json.recovery_remaining, 9);
    });

    test("wrong codes count as failed logins: the account is limited for the guessing address", async () => {
      for (let i = 0; i < 3; i++) {
        const res = await attempt({ totp_code: "123456" }, "10.2.0.1");
        if (res.statusCode === 429) break;
        assert.equal(res.json().error_code, "INVALID_TWO_FACTOR_CODE");
      }
      const limited = await attempt({ totp_code: code() }, "10.2.0.1");
      assert.equal(limited.statusCode, 429, "even the right code, from the address that guessed");
      assert.ok(Number(limited.headers["retry-after"]) > 0);
    });

    test("an organization that requires a second factor: a member without one reaches only its own session", async () => {
      const { app, acme, call } = env();
      const saved = await call(acme.adminKey, "PUT", "/v2/orgs/acme/login-settings", {
        require_two_factor: true,
      });
      assert.equal(saved.status, 200, saved.body);
      const bob = await login(app, "bob@acme.test");
      const refused = await asMember(app, bob, "GET", "/v2/projects");
      assert.equal(refused.status, 403);
      assert.equal(refused.json.error_code, "TWO_FACTOR_ENROLMENT_REQUIRED");
      const own = await asMember(app, bob, "GET", "/v2/auth/two-factor");
      assert.deepEqual(own.json, { enabled: false, required: true, recovery_remaining: 0 });
      const enrol = await asMember(app, bob, "POST", "/v2/auth/two-factor/enrol");
      const bobCode = new TOTP({ secret: enrol.json.secret }).generate();
      const ok = await asMember(app, bob, "POST", "/v2/auth/two-factor/confirm", { totp_code: bobCode });
      assert.equal(ok.status, 200, ok.body);
      assert.equal(
        (await asMember(app, bob, "GET", "/v2/projects")).status,
        200,
        "enrolled: the session works",
      );
      // ada (enrolled) is not affected; a password session of globex is not either
      assert.equal((await asMember(app, session, "GET", "/v2/projects")).status, 200);
      await call(acme.adminKey, "PUT", "/v2/orgs/acme/login-settings", { require_two_factor: false });
    });

    test("removing the factor needs one of its codes; the name is the member's own to edit", async () => {
      clock += 15 * 60_000;
      const app = env().app;
      const wrong = await asMember(app, session, "DELETE", "/v2/auth/two-factor", { totp_code: "000000" });
      assert.equal(wrong.status, 401);
      const removed = await asMember(app, session, "DELETE", "/v2/auth/two-factor", {
        recovery_code: recovery[1],
      });
      assert.equal(removed.status, 204, removed.body);
      assert.equal((await attempt({}, "10.3.0.1")).statusCode, 200, "the password alone logs in again");
      const named = await asMember(app, session, "PATCH", "/v2/members/me", {
        given_name: "Ada",
        family_name: "L",
      });
      assert.equal(named.status, 200, named.body);
      assert.equal(named.json.given_name, "Ada");
      assert.equal(named.json.family_name, "L");
    });

    test("nothing secret reaches the API log, and the calls are the member's", async () => {
      const { app, store } = env();
      await app.apiLog.flush();
      const rows = await store.db
        .selectFrom("api_log")
        .select(["path", "actor_type", "actor_display_name", "request_body", "response_body"])
        .where("path", "like", "/v2/auth/%")
        .execute();
      const text = JSON.stringify(rows);
      for (const value of [secret, ...recovery, PASSWORD])
        assert.ok(!text.includes(value), `leaked: ${value}`);
      const logins = rows.filter((r) => r.path === "/v2/auth/login" && r.actor_type === "member");
      assert.ok(
        logins.some((r) => r.actor_display_name === "ada@acme.test"),
        "a successful login is the member's",
      );
      const enrolments = rows.filter((r) => r.path === "/v2/auth/two-factor/enrol");
      assert.ok(
        enrolments.length > 0 &&
          enrolments.every((r) => r.actor_type === "member" && r.response_body === null),
      );
    });

    test("another organization's admin cannot read or change acme's login settings", async () => {
      const { globex, call } = env();
      assert.equal((await call(globex.adminKey, "GET", "/v2/orgs/acme/login-settings")).status, 404);
      assert.equal(
        (await call(globex.adminKey, "PUT", "/v2/orgs/acme/login-settings", { require_two_factor: true }))
          .status,
        404,
      );
      const anon = await anonymous(env().app, "GET", "/v2/orgs/acme/login-settings");
      assert.equal(anon.status, 401);
    });
  },
  { loginFailuresPerAccount: 3, loginFailuresPerAddress: 50, clock: () => clock },
);
