import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { addMember, anonymous, asMember, login, PASSWORD } from "../helpers/members.ts";
import { CLIENT, startForgingProvider, type TokenClaims } from "../helpers/oidc.ts";

// The SSO flow against a provider that signs whatever ID token the test asks for: every check of the token, the
// state and the e-mail is tried, and nothing is created for a refused one. The certified provider's full flow,
// through its own login page, is test/web/sso.test.ts.

let provider: Awaited<ReturnType<typeof startForgingProvider>>;
before(async () => {
  provider = await startForgingProvider();
});
after(() => provider.close());

const seconds = () => Math.floor(Date.now() / 1000);

describeEachDialect("single sign-on with OpenID Connect", (env) => {
  const settings = (extra: Record<string, unknown> = {}) => ({
    require_two_factor: false,
    sso: {
      provider_name: "Acme ID",
      issuer: provider.issuer,
      client_id: CLIENT.id,
      client_secret: CLIENT.secret,
      allowed_domains: ["acme.test"],
      new_member_access: "read",
      require_sso: false,
      ...extra,
    },
  });
  const put = (body: unknown, key = env().acme.adminKey) =>
    env().call(key, "PUT", `/v2/orgs/acme/login-settings`, body);
  const memberCount = async () =>
    Number(
      (
        await env()
          .store.db.selectFrom("members")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );

  /** Starts a sign-in as the login page's button does: the provider's URL, the state and nonce it carries. */
  async function start(org = "acme") {
    const res = await env().app.inject({
      method: "GET",
      url: `/v2/auth/sso/${org}/login?next=/o/acme/projects`,
    });
    assert.equal(res.statusCode, 302, res.body);
    const location = new URL(String(res.headers.location));
    const cookie = String(res.headers["set-cookie"]).split(";")[0]!;
    return {
      location,
      cookie,
      state: location.searchParams.get("state")!,
      nonce: location.searchParams.get("nonce")!,
    };
  }
  const callback = (e: TestEnv, state: string, cookie: string | undefined, accept = "application/json") =>
    e.app.inject({
      method: "GET",
      url: `/v2/auth/sso/callback?code=the-code&state=${encodeURIComponent(state)}`,
      headers: { accept, ...(cookie && { cookie }) },
    });
  const good =
    (nonce: string, extra: TokenClaims = {}) =>
    (issuer: string) => ({
      iss: issuer,
      aud: CLIENT.id,
      sub: "subject-1",
      nonce,
      iat: seconds(),
      exp: seconds() + 300,
      email: "New.Person@acme.test",
      email_verified: true,
      given_name: "New",
      ...extra,
    });

  before(async () => {
    const { store, acme, globex } = env();
    await addMember(store, "owner@acme.test", [{ organizationId: acme.id }]);
    await addMember(store, "staff@acme.test", [{ organizationId: acme.id, access: "write" }]);
    await addMember(store, "elsewhere@acme.test", [{ organizationId: globex.id }]);
  });

  test("settings: the secret is stored sealed and never returned; bad settings are 422 and change nothing", async () => {
    const { acme, call, store } = env();
    const none = await call(acme.adminKey, "GET", "/v2/orgs/acme/login-settings");
    assert.deepEqual(none.json, { require_two_factor: false, sso: null });
    for (const [body, field] of [
      [settings({ issuer: "http://idp.example.com" }), "issuer"],
      [settings({ require_sso: true }), "break_glass_email"],
      [settings({ break_glass_email: "staff@acme.test" }), "break_glass_email"],
      [{ require_two_factor: false, sso: { ...settings().sso, client_secret: undefined } }, "client_secret"],
    ] as const) {
      const res = await put(body);
      assert.equal(res.status, 422, res.body);
      assert.deepEqual(res.json.detail[0].loc, ["body", "sso", field]);
    }
    assert.equal((await call(acme.adminKey, "GET", "/v2/orgs/acme/login-settings")).json.sso, null);
    const saved = await put(settings());
    assert.equal(saved.status, 200, saved.body);
    assert.equal(saved.json.sso.redirect_uri, "http://gatehouse.test/v2/auth/sso/callback");
    assert.ok(!saved.body.includes(CLIENT.secret));
    const stored = await store.db.selectFrom("org_login_settings").selectAll().executeTakeFirstOrThrow();
    assert.ok(stored.sso_client_secret_sealed && !stored.sso_client_secret_sealed.includes(CLIENT.secret));
    // the secret may be left out to keep it
    const kept = await put({ ...settings(), sso: { ...settings().sso, client_secret: undefined } });
    assert.equal(kept.status, 200, kept.body);
    const providers = await anonymous(env().app, "GET", "/v2/auth/sso/providers");
    assert.deepEqual(providers.json, [
      { organization_key: "acme", provider_name: "Acme ID", login_url: "/v2/auth/sso/acme/login" },
    ]);
    await env().app.apiLog.flush();
    const logged = await store.db
      .selectFrom("api_log")
      .select("request_body")
      .where("method", "=", "PUT")
      .execute();
    assert.ok(logged.length > 0 && logged.every((r) => !String(r.request_body).includes(CLIENT.secret)));
  });

  test("a sign-in: PKCE and nonce sent, a verified allowed e-mail becomes a member, the session lands on next", async () => {
    const before = await memberCount();
    const signIn = await start();
    assert.equal(signIn.location.origin, provider.issuer);
    assert.equal(signIn.location.searchParams.get("code_challenge_method"), "S256");
    assert.ok(signIn.location.searchParams.get("code_challenge"));
    assert.match(signIn.cookie, /^gatehouse_sso=/);
    provider.nextToken(good(signIn.nonce));
    const res = await callback(env(), signIn.state, signIn.cookie);
    assert.equal(res.statusCode, 302, res.body);
    assert.equal(res.headers.location, "/o/acme/projects");
    const cookie = [res.headers["set-cookie"]].flat().find((c) => String(c).startsWith("gatehouse_session="));
    assert.ok(cookie);
    const session = await asMember(
      env().app,
      { cookie: cookie.split(";")[0]!, csrf: "", body: {} },
      "GET",
      "/v2/members/me",
    );
    assert.equal(session.status, 200, session.body);
    assert.equal(session.json.email, "new.person@acme.test");
    assert.deepEqual(
      session.json.grants.map((g: { object_type: string; access_level: string }) => [
        g.object_type,
        g.access_level,
      ]),
      [["org", "read"]],
    );
    assert.equal(await memberCount(), before + 1);
    const row = await env()
      .store.db.selectFrom("members")
      .selectAll()
      .where("email", "=", "new.person@acme.test")
      .executeTakeFirstOrThrow();
    assert.equal(row.password_hash, null, "an SSO member has no password");

    // The same answer again (a replayed state) is refused and opens nothing.
    const sessions = await env().store.db.selectFrom("sessions").select("id").execute();
    provider.nextToken(good(signIn.nonce));
    const replay = await callback(env(), signIn.state, signIn.cookie);
    assert.equal(replay.statusCode, 401);
    assert.equal(replay.json().error_code, "SSO_FAILED");
    assert.match(replay.json().message, /already used/);
    assert.equal(
      (await env().store.db.selectFrom("sessions").select("id").execute()).length,
      sessions.length,
    );

    // The API log has the callback as the member, without its code or state.
    await env().app.apiLog.flush();
    const logged = await env()
      .store.db.selectFrom("api_log")
      .select(["path", "actor_type", "actor_display_name", "status"])
      .where("path", "like", "/v2/auth/sso/callback%")
      .execute();
    assert.ok(logged.length >= 2);
    for (const r of logged) assert.equal(r.path, "/v2/auth/sso/callback");
    assert.ok(
      logged.some((r) => r.actor_type === "member" && r.actor_display_name === "new.person@acme.test"),
    );
  });

  test("forged answers: each is refused with its reason and creates no member", async () => {
    const cases: [string, (nonce: string) => Parameters<typeof provider.nextToken>, RegExp][] = [
      ["wrong audience", (n) => [good(n, { aud: "someone-else" })], /aud/],
      ["wrong issuer", (n) => [(i) => ({ ...good(n)(i), iss: "http://127.0.0.1:1" })], /iss/],
      ["wrong nonce", (n) => [good(`${n}x`)], /nonce/],
      ["expired", (n) => [good(n, { iat: seconds() - 7200, exp: seconds() - 3600 })], /exp/],
      ["badly signed", (n) => [good(n), { foreignKey: true }], /signature|key/i],
      ["unverified e-mail", (n) => [good(n, { email_verified: false })], /not verified/],
      ["domain not allowed", (n) => [good(n, { email: "mallory@evil.test" })], /evil\.test is not allowed/],
    ];
    for (const [name, token, reason] of cases) {
      const before = await memberCount();
      const signIn = await start();
      provider.nextToken(...token(signIn.nonce));
      const res = await callback(env(), signIn.state, signIn.cookie);
      assert.equal(res.statusCode, 401, `${name}: ${res.body}`);
      assert.equal(res.json().error_code, "SSO_FAILED", name);
      assert.match(res.json().message, reason, name);
      assert.equal(res.headers["set-cookie"]?.toString().includes("gatehouse_session="), false, name);
      assert.equal(await memberCount(), before, name);
    }
  });

  test("a callback from another browser, an unknown state, or a browser refused goes back to the login page", async () => {
    const signIn = await start();
    provider.nextToken(good(signIn.nonce));
    const noCookie = await callback(env(), signIn.state, undefined);
    assert.equal(noCookie.statusCode, 401);
    assert.match(noCookie.json().message, /not started in this browser/);
    const unknown = await callback(env(), "made-up", "gatehouse_sso=made-up");
    assert.equal(unknown.statusCode, 401);
    assert.match(unknown.json().message, /unknown sign-in/);
    const html = await callback(env(), "made-up", "gatehouse_sso=made-up", "text/html");
    assert.equal(html.statusCode, 302);
    assert.match(String(html.headers.location), /^\/login\?sso_error=unknown%20sign-in/);
    const missing = await env().app.inject({ method: "GET", url: "/v2/auth/sso/nope/login" });
    assert.equal(missing.statusCode, 404);
  });

  test("a member of another organization with an allowed domain is given the grant on its first sign-in", async () => {
    const signIn = await start();
    provider.nextToken(good(signIn.nonce, { email: "elsewhere@acme.test" }));
    const res = await callback(env(), signIn.state, signIn.cookie);
    assert.equal(res.statusCode, 302, res.body);
    const member = await env()
      .store.db.selectFrom("members")
      .select("id")
      .where("email", "=", "elsewhere@acme.test")
      .executeTakeFirstOrThrow();
    const grants = await env()
      .store.db.selectFrom("member_grants")
      .select(["organization_id", "access_level"])
      .where("member_id", "=", member.id)
      .execute();
    assert.deepEqual(grants.map((g) => g.organization_id).sort(), [env().acme.id, env().globex.id].sort());
  });

  test("require SSO: password logins and password sessions are refused, but for the break-glass admin", async () => {
    const app = env().app;
    const staffSession = await login(app, "staff@acme.test");
    const saved = await put(settings({ require_sso: true, break_glass_email: "owner@acme.test" }));
    assert.equal(saved.status, 200, saved.body);
    assert.equal(saved.json.sso.break_glass_email, "owner@acme.test");
    const refused = await anonymous(app, "POST", "/v2/auth/login", {
      email: "staff@acme.test",
      password: PASSWORD,
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.json.error_code, "SSO_REQUIRED");
    assert.match(refused.json.message, /sign in with Acme ID/);
    const old = await asMember(app, staffSession, "GET", "/v2/projects");
    assert.equal(old.status, 403);
    assert.equal(old.json.error_code, "SSO_REQUIRED");
    const owner = await login(app, "owner@acme.test");
    assert.equal((await asMember(app, owner, "GET", "/v2/projects")).status, 200);
    // an SSO session of the same member works
    const signIn = await start();
    provider.nextToken(good(signIn.nonce, { email: "staff@acme.test" }));
    const res = await callback(env(), signIn.state, signIn.cookie);
    const cookie = [res.headers["set-cookie"]]
      .flat()
      .find((c) => String(c).startsWith("gatehouse_session="))!;
    const sso = await asMember(
      app,
      { cookie: cookie.split(";")[0]!, csrf: "", body: {} },
      "GET",
      "/v2/projects",
    );
    assert.equal(sso.status, 200, sso.body);
    // back to passwords for the next suites of this file
    assert.equal((await put({ require_two_factor: false, sso: null })).status, 200);
  });
});
