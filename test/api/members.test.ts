import { test, before } from "node:test";
import assert from "node:assert/strict";
import { buildTestApp, describeEachDialect, PUBLIC_URL } from "../helpers/app.ts";
import {
  addMember,
  anonymous,
  asMember,
  login,
  PASSWORD,
  sessionOf,
  type Session,
} from "../helpers/members.ts";

describeEachDialect("members, sessions and grants", (env) => {
  const sessions: Record<string, Session> = {};
  const ids: Record<string, string> = {};

  before(async () => {
    const { store, acme, globex, app } = env();
    ids["owner"] = await addMember(store, "owner@acme.test", [{ organizationId: acme.id }]);
    ids["reader"] = await addMember(store, "reader@acme.test", [{ organizationId: acme.id, access: "read" }]);
    ids["envWriter"] = await addMember(store, "env@acme.test", [
      {
        organizationId: acme.id,
        level: "env",
        access: "write",
        projectId: acme.projectId,
        environmentId: acme.envs.production,
      },
    ]);
    ids["both"] = await addMember(store, "both@example.test", [
      { organizationId: acme.id, access: "read" },
      { organizationId: globex.id },
    ]);
    for (const [name, email] of [
      ["owner", "owner@acme.test"],
      ["reader", "reader@acme.test"],
      ["envWriter", "env@acme.test"],
      ["both", "both@example.test"],
    ] as const) {
      sessions[name] = await login(app, email);
    }
  });

  test("login sets an HttpOnly, SameSite=Strict session cookie and returns the CSRF token", async () => {
    const { app, acme } = env();
    const res = await anonymous(app, "POST", "/v2/auth/login", {
      email: "OWNER@acme.test",
      password: PASSWORD,
    });
    assert.equal(res.status, 200);
    const cookie = String(res.headers["set-cookie"]);
    assert.match(
      cookie,
      /^gatehouse_session=ghs_[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Expires=/,
    );
    assert.doesNotMatch(cookie, /Secure/, "http public URL: no Secure");
    assert.equal(res.json.email, "owner@acme.test");
    assert.equal(res.json.active_organization_id, acme.id);
    assert.equal(typeof res.json.csrf_token, "string");
    assert.ok(!res.body.includes(cookie.split(";")[0]!.split("=")[1]!), "the token is not in the body");
    const again = await asMember(app, sessionOf(res), "GET", "/v2/auth/session");
    assert.equal(again.status, 200);
    assert.equal(again.json.csrf_token, res.json.csrf_token);
  });

  test("a wrong password and an unknown e-mail get the same 401 body", async () => {
    const { app } = env();
    const wrong = await anonymous(app, "POST", "/v2/auth/login", {
      email: "owner@acme.test",
      password: "x".repeat(13),
    });
    const unknown = await anonymous(app, "POST", "/v2/auth/login", {
      email: "nobody@acme.test",
      password: "x".repeat(13),
    });
    assert.equal(wrong.status, 401);
    assert.equal(unknown.status, 401);
    const strip = (body: Record<string, unknown>) => ({ ...body, id: undefined });
    assert.deepEqual(strip(wrong.json), strip(unknown.json));
    assert.equal(wrong.json.error_code, "INVALID_CREDENTIALS");
    assert.equal(wrong.headers["set-cookie"], undefined);
  });

  test("an unknown e-mail costs about what a wrong password costs (the dummy hash is verified)", async () => {
    const { app } = env();
    const time = async (email: string) => {
      const start = process.hrtime.bigint();
      await anonymous(app, "POST", "/v2/auth/login", { email, password: "not the password at all" });
      return Number(process.hrtime.bigint() - start);
    };
    let known = 0;
    let unknown = 0;
    for (let i = 0; i < 4; i++) {
      known += await time("owner@acme.test");
      unknown += await time(`nobody${i}@acme.test`);
    }
    // Without the dummy hash an unknown e-mail answers ~50 times faster; the bounds leave room for a busy machine.
    const ratio = unknown / known;
    assert.ok(ratio > 0.33 && ratio < 3, `unknown/known time ratio ${ratio.toFixed(2)}`);
  });

  test("a read member reads and gets 403 on writes", async () => {
    const { app, acme } = env();
    const s = sessions["reader"]!;
    assert.equal((await asMember(app, s, "GET", "/v2/projects")).status, 200);
    assert.equal(
      (await asMember(app, s, "GET", `/v2/facts/${acme.projectId}/${acme.envs.production}/users`)).status,
      200,
    );
    for (const [method, url, body] of [
      ["POST", "/v2/projects", { key: "nope", name: "Nope" }],
      ["POST", `/v2/facts/${acme.projectId}/${acme.envs.production}/users`, { key: "u1" }],
      ["POST", "/v2/api-key", { name: "k" }],
      ["POST", `/v2/orgs/${acme.id}/invites`, [{ email: "x@acme.test" }]],
      ["DELETE", `/v2/members/${ids["owner"]}`, undefined],
    ] as const) {
      const res = await asMember(app, s, method, url, body);
      assert.equal(res.status, 403, `${method} ${url}: ${res.body}`);
      assert.equal(res.json.error_code, "FORBIDDEN_ACCESS");
    }
  });

  test("a member of one organization sees nothing of another (404)", async () => {
    const { app, globex } = env();
    const s = sessions["owner"]!;
    assert.equal((await asMember(app, s, "GET", `/v2/orgs/${globex.id}`)).status, 404);
    assert.equal((await asMember(app, s, "GET", `/v2/projects/${globex.projectId}`)).status, 404);
    assert.equal(
      (await asMember(app, s, "GET", `/v2/members/${ids["both"]}`)).status,
      200,
      "both is in acme too",
    );
    const list = await asMember(app, s, "GET", "/v2/orgs");
    assert.deepEqual(
      list.json.map((o: { key: string }) => o.key),
      ["acme"],
    );
  });

  test("an environment grant reaches only that environment", async () => {
    const { app, acme } = env();
    const s = sessions["envWriter"]!;
    const prod = `/v2/facts/${acme.projectId}/${acme.envs.production}/users`;
    const dev = `/v2/facts/${acme.projectId}/${acme.envs.development}/users`;
    assert.equal((await asMember(app, s, "POST", prod, { key: "from-env-member" })).status, 201);
    assert.equal((await asMember(app, s, "GET", dev)).status, 403);
    assert.equal((await asMember(app, s, "POST", dev, { key: "nope" })).status, 403);
    assert.equal((await asMember(app, s, "POST", "/v2/projects", { key: "nope", name: "n" })).status, 403);
  });

  test("CSRF: a session's write without the token, with a wrong one or from another origin changes nothing", async () => {
    const { app, acme } = env();
    const s = sessions["owner"]!;
    const url = `/v2/facts/${acme.projectId}/${acme.envs.production}/users`;
    const attempts = [
      { "x-csrf-token": "" },
      { "x-csrf-token": "A".repeat(43) },
      { origin: "https://evil.example" },
    ];
    for (const headers of attempts) {
      const res = await app.inject({
        method: "POST",
        url,
        headers: { cookie: s.cookie, origin: PUBLIC_URL, "x-csrf-token": s.csrf, ...headers },
        payload: { key: "csrf-victim" },
      });
      assert.equal(res.statusCode, 403, JSON.stringify(headers));
      assert.equal(res.json().error_code, "CSRF_CHECK_FAILED");
    }
    const missing = await app.inject({
      method: "POST",
      url,
      headers: { cookie: s.cookie },
      payload: { key: "csrf-victim" },
    });
    assert.equal(missing.statusCode, 403);
    assert.equal((await asMember(app, s, "GET", `${url}/csrf-victim`)).status, 404, "nothing was created");
    assert.equal(
      (await asMember(app, s, "POST", url, { key: "csrf-ok" })).status,
      201,
      "with the token it works",
    );
    // a Bearer key is not subject to it
    assert.equal((await env().call(acme.adminKey, "POST", url, { key: "by-key" })).status, 201);
  });

  test("members: list, get by id or e-mail, me, grant, revoke; the last admin stays (409)", async () => {
    const { app, acme, store } = env();
    const s = sessions["owner"]!;
    const list = await asMember(app, s, "GET", "/v2/members");
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.json.map((m: { email: string }) => m.email),
      ["both@example.test", "env@acme.test", "owner@acme.test", "reader@acme.test"],
    );
    const owner = list.json.find((m: { email: string }) => m.email === "owner@acme.test");
    assert.deepEqual(owner.grants, [
      {
        organization_id: acme.id,
        object_type: "org",
        access_level: "admin",
        organization_key: "acme",
        organization_name: "acme inc",
      },
    ]);
    assert.equal((await asMember(app, s, "GET", "/v2/members/reader@acme.test")).json.id, ids["reader"]);
    assert.equal((await asMember(app, s, "GET", "/v2/members/me")).json.email, "owner@acme.test");
    assert.equal(
      (await env().call(acme.adminKey, "GET", "/v2/members/me")).status,
      403,
      "a key is no member",
    );
    const envFilter = await asMember(
      app,
      s,
      "GET",
      `/v2/members?project_id=${acme.projectId}&env_id=production`,
    );
    assert.deepEqual(
      envFilter.json.map((m: { email: string }) => m.email),
      ["env@acme.test"],
    );

    // the reader becomes a writer of the default project, then loses it again
    const granted = await asMember(app, s, "POST", "/v2/members", {
      email: "reader@acme.test",
      permissions: [
        { organization_id: acme.id, object_type: "project", project_id: "default", access_level: "write" },
      ],
    });
    assert.equal(granted.status, 200, granted.body);
    assert.equal(granted.json.grants.length, 2);
    const writes = await asMember(app, sessions["reader"]!, "POST", `/v2/facts/default/production/users`, {
      key: "by-reader",
    });
    assert.equal(writes.status, 201, "the new grant counts at the next request");
    const revoked = await asMember(app, s, "DELETE", "/v2/members", {
      id: ids["reader"],
      permissions: [
        {
          organization_id: acme.id,
          object_type: "project",
          project_id: acme.projectId,
          access_level: "write",
        },
      ],
    });
    assert.equal(revoked.status, 204);
    assert.equal(
      (await asMember(app, sessions["reader"]!, "POST", `/v2/facts/default/production/users`, { key: "x2" }))
        .status,
      403,
    );

    // the last organization admin can neither go nor be demoted
    assert.equal((await asMember(app, s, "DELETE", `/v2/members/${ids["owner"]}`)).status, 409);
    const demote = await asMember(app, s, "DELETE", "/v2/members", {
      id: ids["owner"],
      permissions: [{ organization_id: acme.id, object_type: "org", access_level: "admin" }],
    });
    assert.equal(demote.status, 409);
    const patched = await asMember(app, s, "PATCH", `/v2/members/${ids["owner"]}`, {
      settings: { theme: "dark" },
    });
    assert.deepEqual(patched.json.settings, { theme: "dark" });
    assert.equal((await asMember(app, s, "GET", "/v2/members/nobody@acme.test")).status, 404);
    assert.ok(
      await store.db.selectFrom("members").select("id").where("id", "=", ids["owner"]!).executeTakeFirst(),
    );
  });

  test("a member with grants in two organizations lists both and switches", async () => {
    const { app, acme, globex } = env();
    const s = sessions["both"]!;
    assert.equal(s.body["active_organization_id"], acme.id);
    const orgs = await asMember(app, s, "GET", "/v2/orgs");
    assert.deepEqual(orgs.json.map((o: { key: string }) => o.key).sort(), ["acme", "globex"]);
    assert.equal(
      (await asMember(app, s, "POST", "/v2/projects", { key: "p2", name: "P" })).status,
      403,
      "read in acme",
    );
    const switched = await asMember(app, s, "PUT", "/v2/auth/session/organization", {
      organization_id: "globex",
    });
    assert.equal(switched.status, 200, switched.body);
    assert.equal(switched.json.active_organization_id, globex.id);
    assert.equal((await asMember(app, s, "GET", "/v2/orgs/active/org")).json.key, "globex");
    assert.equal(
      (await asMember(app, s, "POST", "/v2/projects", { key: "p2", name: "P" })).status,
      200,
      "admin in globex",
    );
    const key = await asMember(app, s, "POST", "/v2/api-key", {
      name: "made by a member",
      object_type: "org",
    });
    assert.equal(key.status, 200);
    assert.equal(key.json.created_by_member.email, "both@example.test");
    const other = await asMember(app, sessions["owner"]!, "PUT", "/v2/auth/session/organization", {
      organization_id: "globex",
    });
    assert.equal(other.status, 404, "an organization the member holds no grant in");
  });

  test("logout and removal end sessions at once (401)", async () => {
    const { app, store, acme } = env();
    const temp = await addMember(store, "temp@acme.test", [{ organizationId: acme.id, access: "write" }]);
    const a = await login(app, "temp@acme.test");
    const b = await login(app, "temp@acme.test");
    const out = await asMember(app, a, "POST", "/v2/auth/logout");
    assert.equal(out.status, 204);
    assert.match(String(out.headers["set-cookie"]), /Max-Age=0/);
    assert.equal((await asMember(app, a, "GET", "/v2/projects")).status, 401);
    assert.equal((await asMember(app, b, "GET", "/v2/projects")).status, 200, "another session lives on");
    assert.equal((await asMember(app, sessions["owner"]!, "DELETE", `/v2/members/${temp}`)).status, 204);
    const after = await asMember(app, b, "GET", "/v2/projects");
    assert.equal(after.status, 401);
    assert.equal(after.json.error_code, "UNAUTHORIZED");
  });

  test("passwords: too short or common gets 422; a change ends the other sessions", async () => {
    const { app, store, acme } = env();
    await addMember(store, "pw@acme.test", [{ organizationId: acme.id, access: "read" }]);
    const a = await login(app, "pw@acme.test");
    const b = await login(app, "pw@acme.test");
    for (const new_password of ["short", "password1234", "pw@acme.test"]) {
      const res = await asMember(app, a, "PUT", "/v2/auth/password", {
        current_password: PASSWORD,
        new_password,
      });
      assert.equal(res.status, 422, new_password);
    }
    const wrong = await asMember(app, a, "PUT", "/v2/auth/password", {
      current_password: "not the password",
      new_password: "another long passphrase",
    });
    assert.equal(wrong.status, 401);
    const ok = await asMember(app, a, "PUT", "/v2/auth/password", {
      current_password: PASSWORD,
      new_password: "another long passphrase",
    });
    assert.equal(ok.status, 204);
    assert.equal((await asMember(app, a, "GET", "/v2/auth/session")).status, 200);
    assert.equal((await asMember(app, b, "GET", "/v2/auth/session")).status, 401);
    await login(app, "pw@acme.test", "another long passphrase");
  });

  test("invites: created with a link, listed, accepted once; expired, reused and canceled ones are refused", async () => {
    const { app, store, acme } = env();
    const s = sessions["owner"]!;
    const created = await asMember(app, s, "POST", `/v2/orgs/${acme.key}/invites`, [
      { email: "New.Person@acme.test", role: "write" },
      { email: "reader@acme.test" },
      { email: "late@acme.test", role: "read" },
      { email: "canceled@acme.test", role: "read" },
    ]);
    assert.equal(created.status, 200, created.body);
    assert.equal(created.json.success.length, 3);
    assert.deepEqual(created.json.failed, [
      { email: "reader@acme.test", reason: "already a member of this organization" },
    ]);
    const [invite, late, canceled] = created.json.success;
    assert.equal(invite.email, "new.person@acme.test");
    assert.equal(invite.status, "pending");
    assert.match(invite.invite_code, /^[0-9a-f-]{36}$/);
    // The link's end, as a date: GATEHOUSE_INVITE_EXPIRY_DAYS (7 by default) after the invite.
    assert.equal(Date.parse(invite.expires_at) - Date.parse(invite.created_at), 7 * 86_400_000);
    const listed = await asMember(app, s, "GET", `/v2/orgs/${acme.id}/invites`);
    const inList = listed.json.find((i: { id: string }) => i.id === invite.id);
    assert.equal(inList.invite_code, invite.invite_code);
    assert.equal(inList.expires_at, invite.expires_at);

    const weak = await anonymous(app, "POST", "/v2/auth/invites/accept", {
      invite_code: invite.invite_code,
      password: "short",
    });
    assert.equal(weak.status, 422);
    const accepted = await anonymous(app, "POST", "/v2/auth/invites/accept", {
      invite_code: invite.invite_code,
      password: "a fresh new passphrase",
      first_name: "New",
    });
    assert.equal(accepted.status, 200, accepted.body);
    const member = sessionOf(accepted);
    const me = await asMember(app, member, "GET", "/v2/members/me");
    assert.equal(me.json.given_name, "New");
    assert.deepEqual(
      me.json.grants.map(
        (g: { object_type: string; access_level: string }) => `${g.object_type}:${g.access_level}`,
      ),
      ["org:write"],
    );
    const reused = await anonymous(app, "POST", "/v2/auth/invites/accept", {
      invite_code: invite.invite_code,
      password: "a fresh new passphrase",
    });
    assert.equal(reused.status, 409);

    await store.db
      .updateTable("invites")
      .set({ expires_at: "2000-01-01T00:00:00.000+00:00" })
      .where("id", "=", late.id)
      .execute();
    const expired = await anonymous(app, "POST", "/v2/auth/invites/accept", {
      invite_code: late.invite_code,
      password: "a fresh new passphrase",
    });
    assert.equal(expired.status, 409);
    assert.match(expired.json.message, /expired/);

    assert.equal(
      (await asMember(app, s, "DELETE", `/v2/orgs/${acme.id}/invites/${canceled.id}`)).status,
      204,
    );
    const gone = await anonymous(app, "POST", "/v2/auth/invites/accept", {
      invite_code: canceled.invite_code,
      password: "a fresh new passphrase",
    });
    assert.equal(gone.status, 404);
    assert.equal((await asMember(app, s, "GET", `/v2/orgs/globex/invites`)).status, 404);
  });

  test("an invite to an existing member needs its own password and leaves it unchanged", async () => {
    const { app, store, acme, globex } = env();
    await addMember(store, "elsewhere@globex.test", [{ organizationId: globex.id }]);
    const created = await asMember(app, sessions["owner"]!, "POST", `/v2/orgs/${acme.id}/invites`, [
      { email: "elsewhere@globex.test", role: "read" },
    ]);
    const code = created.json.success[0].invite_code;
    const takeover = await anonymous(app, "POST", "/v2/auth/invites/accept", {
      invite_code: code,
      password: "an attacker's passphrase",
    });
    assert.equal(takeover.status, 401);
    const accepted = await anonymous(app, "POST", "/v2/auth/invites/accept", {
      invite_code: code,
      password: PASSWORD,
    });
    assert.equal(accepted.status, 200, accepted.body);
    assert.equal(accepted.json.active_organization_id, acme.id);
    assert.equal(accepted.json.organizations.length, 2);
    await login(app, "elsewhere@globex.test");
  });

  test("with an https public URL the cookie is Secure and __Host- prefixed, and writes must come from that origin", async () => {
    const { store, box, acme } = env();
    const https = await buildTestApp(store, box, { publicUrl: "https://gatehouse.example" });
    try {
      const res = await anonymous(https, "POST", "/v2/auth/login", {
        email: "owner@acme.test",
        password: PASSWORD,
      });
      assert.match(
        String(res.headers["set-cookie"]),
        /^__Host-gatehouse_session=ghs_[^;]+; Path=\/; HttpOnly; SameSite=Strict; Secure;/,
      );
      const s = sessionOf(res);
      const url = `/v2/facts/${acme.projectId}/${acme.envs.production}/users`;
      const wrongOrigin = await asMember(https, s, "POST", url, { key: "h1" });
      assert.equal(wrongOrigin.status, 403, "http://gatehouse.test is not the public origin");
      const right = await asMember(
        https,
        s,
        "POST",
        url,
        { key: "h1" },
        { origin: "https://gatehouse.example" },
      );
      assert.equal(right.status, 201, right.body);
      const noOrigin = await https.inject({
        method: "POST",
        url,
        headers: { cookie: s.cookie, "x-csrf-token": s.csrf },
        payload: { key: "h2" },
      });
      assert.equal(noOrigin.statusCode, 201, "a request without Origin relies on the token");
    } finally {
      await https.close();
    }
  });

  test("the API log attributes session calls to the member", async () => {
    const { app, acme, store } = env();
    const s = sessions["owner"]!;
    await asMember(app, s, "GET", "/v2/members/me");
    await app.apiLog.flush();
    const row = await store.db
      .selectFrom("api_log")
      .selectAll()
      .where("path", "=", "/v2/members/me")
      .where("actor_type", "=", "member")
      .executeTakeFirst();
    assert.ok(row);
    assert.equal(row.actor_id, ids["owner"]);
    assert.equal(row.actor_display_name, "owner@acme.test");
    assert.equal(row.organization_id, acme.id);
  });

  test("the API log keeps no password or code, whatever the Content-Type of the body", async () => {
    const { app, acme, store } = env();
    await addMember(store, "plain@acme.test", [{ organizationId: acme.id, access: "read" }]);
    const s = await login(app, "plain@acme.test");
    const secrets = ["current-password-in-clear", "new-password-in-clear", "settings-password-in-clear"];
    // fetch sends a string body as text/plain: JSON in it must not escape the name-based redaction
    const asText = (body: unknown) => ({
      headers: { "content-type": "text/plain;charset=UTF-8" },
      payload: JSON.stringify(body),
    });
    const change = asText({ current_password: secrets[0], new_password: secrets[1] });
    const changed = await app.inject({
      method: "PUT",
      url: "/v2/auth/password",
      headers: { cookie: s.cookie, "x-csrf-token": s.csrf, origin: PUBLIC_URL, ...change.headers },
      payload: change.payload,
    });
    assert.equal(changed.statusCode, 422, "a text body is not a JSON object");
    const json = await anonymous(app, "POST", "/v2/auth/login", {
      email: "plain@acme.test",
      password: PASSWORD,
    });
    assert.equal(json.status, 200);
    const create = asText({ key: "texty", name: "Texty", settings: { password: secrets[2] } });
    const project = await app.inject({
      method: "POST",
      url: "/v2/projects",
      headers: { authorization: `Bearer ${acme.adminKey}`, ...create.headers },
      payload: create.payload,
    });
    assert.equal(project.statusCode, 422, "a text body is not a JSON object");
    await app.apiLog.flush();
    const rows = await store.db.selectFrom("api_log").selectAll().execute();
    const stored = JSON.stringify(rows);
    for (const secret of [...secrets, PASSWORD]) assert.ok(!stored.includes(secret), `in the log: ${secret}`);
    const logins = rows.filter((r) => r.path === "/v2/auth/login");
    assert.ok(logins.length > 0);
    assert.ok(
      logins.every((r) => r.request_body === null),
      "no login body is stored",
    );
    const texty = rows.find((r) => r.path === "/v2/projects" && r.request_body?.includes("texty"));
    assert.ok(texty, "the text body is kept, redacted");
    assert.equal(JSON.parse(texty.request_body ?? "{}").settings.password, "[REDACTED]");
  });

  test("adding someone who is not a member is an invite, whatever the e-mail: nothing about them is shown", async () => {
    const { app, store, acme, globex } = env();
    const owner = sessions["owner"]!;
    const elsewhere = await addMember(store, "only-globex@globex.test", [{ organizationId: globex.id }]);
    await store.db
      .updateTable("members")
      .set({ first_name: "Private", last_ip: "10.1.2.3", logins_count: 7 })
      .where("id", "=", elsewhere)
      .execute();
    const answers: Record<string, unknown>[] = [];
    for (const email of ["only-globex@globex.test", "nobody-yet@nowhere.test"]) {
      const res = await asMember(app, owner, "POST", "/v2/members", {
        email,
        permissions: [{ organization_id: acme.id, object_type: "org", access_level: "read" }],
      });
      assert.equal(res.status, 202, `${email}: ${res.body}`);
      assert.equal(res.json.email, email);
      assert.equal(res.json.status, "pending");
      assert.equal(res.json.role, "read");
      answers.push(Object.fromEntries(Object.keys(res.json).map((k) => [k, typeof res.json[k]])));
      assert.doesNotMatch(res.body, /Private|10\.1\.2\.3|logins_count|last_login/);
    }
    assert.deepEqual(answers[0], answers[1], "an account elsewhere and no account answer alike");
    const grants = await store.db
      .selectFrom("member_grants")
      .selectAll()
      .where("member_id", "=", elsewhere)
      .execute();
    assert.deepEqual(
      grants.map((g) => g.organization_id),
      [globex.id],
      "no grant in acme without their consent",
    );
    // by id, a member of another organization does not exist here
    const byId = await asMember(app, owner, "POST", "/v2/members", {
      id: elsewhere,
      permissions: [{ organization_id: acme.id, object_type: "org", access_level: "read" }],
    });
    assert.equal(byId.status, 404);
    // an invite carries one organization-level role
    const narrow = await asMember(app, owner, "POST", "/v2/members", {
      email: "narrow@nowhere.test",
      permissions: [
        { organization_id: acme.id, object_type: "project", project_id: "default", access_level: "write" },
      ],
    });
    assert.equal(narrow.status, 422);
  });
});
