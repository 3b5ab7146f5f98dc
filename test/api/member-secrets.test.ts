import { test } from "node:test";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { SMTPServer } from "smtp-server";
import { buildApp } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { createSecretBox } from "../../src/lib/secrets.ts";
import { createOrganizationRecords } from "../../src/domain/organization-records.ts";
import { createSetupToken } from "../../src/domain/setup-token-records.ts";
import { loggerOptions } from "../../src/http/logging.ts";
import { DIALECTS, freshStore } from "../helpers/stores.ts";
import { PUBLIC_URL } from "../helpers/app.ts";
import { anonymous, asMember, sessionOf } from "../helpers/members.ts";

/** A local SMTP server that keeps what it receives: invites are mailed for real, not to a mock. */
async function startSmtp() {
  const received: { to: string[]; data: string }[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      let data = "";
      stream.on("data", (chunk: Buffer) => (data += chunk.toString("utf8")));
      stream.on("end", () => {
        received.push({ to: session.envelope.rcptTo.map((r) => r.address), data });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as { port: number };
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

for (const { dialect, skip } of DIALECTS) {
  test(
    `setup, login, invite (mailed), password change: no password, token or code in the API log or the log lines [${dialect}]`,
    { skip },
    async () => {
      const smtp = await startSmtp();
      const store = await freshStore(dialect);
      const box = createSecretBox("test-secret-key-that-is-long-enough-000");
      const lines: string[] = [];
      const stream = new Writable({
        write(chunk, _enc, done) {
          lines.push(String(chunk));
          done();
        },
      });
      const app = await buildApp({
        config: { ...loadConfig([], {}), publicUrl: PUBLIC_URL, smtpUrl: smtp.url, apiLogFlushMs: 10 },
        store,
        box,
        logger: { ...(await loggerOptions("trace", false)), stream },
      });
      await app.ready();
      try {
        await createOrganizationRecords(store.db, box, { key: "acme", name: "Acme" });
        const secrets: string[] = [];
        const ownerPassword = "owner's long passphrase";
        const newPassword = "owner's newer passphrase";
        const inviteePassword = "invitee's own passphrase";
        secrets.push(ownerPassword, newPassword, inviteePassword);

        // the setup link creates the owner, once
        const setupToken = await createSetupToken(store.db);
        secrets.push(setupToken);
        const setup = await anonymous(app, "POST", "/v2/auth/setup", {
          setup_token: setupToken,
          email: "owner@acme.test",
          password: ownerPassword,
        });
        assert.equal(setup.status, 200, setup.body);
        const again = await anonymous(app, "POST", "/v2/auth/setup", {
          setup_token: setupToken,
          email: "second@acme.test",
          password: ownerPassword,
        });
        assert.equal(again.status, 404, "a setup link works once");

        const login = await anonymous(app, "POST", "/v2/auth/login", {
          email: "owner@acme.test",
          password: ownerPassword,
        });
        assert.equal(login.status, 200);
        const owner = sessionOf(login);
        secrets.push(
          owner.cookie.split("=")[1]!,
          owner.csrf,
          sessionOf(setup).cookie.split("=")[1]!,
          sessionOf(setup).csrf,
        );

        const invited = await asMember(app, owner, "POST", "/v2/orgs/acme/invites", [
          { email: "invitee@acme.test", role: "read" },
        ]);
        assert.equal(invited.status, 200, invited.body);
        const code: string = invited.json.success[0].invite_code;
        assert.equal(invited.json.success[0].failed_reason, undefined, "the mail went out");
        secrets.push(code);
        // the mail arrived at the local SMTP server, with the accept link
        assert.equal(smtp.received.length, 1);
        assert.deepEqual(smtp.received[0]!.to, ["invitee@acme.test"]);
        assert.ok(smtp.received[0]!.data.replace(/=\r\n/g, "").includes(`${PUBLIC_URL}/invite/${code}`));

        const listed = await asMember(app, owner, "GET", "/v2/orgs/acme/invites");
        assert.equal(listed.json[0].invite_code, code);
        const accepted = await anonymous(app, "POST", "/v2/auth/invites/accept", {
          invite_code: code,
          password: inviteePassword,
        });
        assert.equal(accepted.status, 200, accepted.body);
        secrets.push(sessionOf(accepted).cookie.split("=")[1]!, sessionOf(accepted).csrf);

        const changed = await asMember(app, owner, "PUT", "/v2/auth/password", {
          current_password: ownerPassword,
          new_password: newPassword,
        });
        assert.equal(changed.status, 204);
        const failed = await anonymous(app, "POST", "/v2/auth/login", {
          email: "owner@acme.test",
          password: ownerPassword,
        });
        assert.equal(failed.status, 401, "the old password no longer works");

        await app.apiLog.flush();
        const rows = await store.db.selectFrom("api_log").selectAll().execute();
        assert.ok(rows.length >= 8);
        assert.ok(rows.some((r) => r.actor_type === "member" && r.actor_display_name === "owner@acme.test"));
        const stored = rows.map((r) => JSON.stringify(r)).join("\n");
        const logged = lines.join("");
        assert.ok(logged.includes("/v2/auth/login"), "the log lines were captured");
        for (const secret of secrets) {
          assert.ok(!stored.includes(secret), `the API log holds a secret: ${secret.slice(0, 6)}…`);
          assert.ok(!logged.includes(secret), `a log line holds a secret: ${secret.slice(0, 6)}…`);
        }
      } finally {
        await app.close();
        await store.close();
        await smtp.close();
      }
    },
  );
}
