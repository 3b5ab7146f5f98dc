import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import type { Page } from "playwright-core";
import { freePort } from "../helpers/process.ts";
import { assertAccessible, browserUnavailable, SCREENSHOTS } from "../helpers/browser.ts";
import { CLIENT, startOidcProvider, type RunningProvider } from "../helpers/oidc.ts";
import { fillLogin, startDashboardSession, type DashboardSession } from "../helpers/web-session.ts";
import { totpOf } from "../../src/domain/two-factor-records.ts";

// Signing in through a real OpenID provider (the certified oidc-provider, with its own login page) and a second
// factor for password logins, in Chromium against a started server.

const unavailable = browserUnavailable();

let s: DashboardSession;
let provider: RunningProvider;

before(async () => {
  if (unavailable) return;
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  provider = await startOidcProvider(`${publicUrl}/v2/auth/sso/callback`);
  s = await startDashboardSession("sso", { port, env: { GATEHOUSE_PUBLIC_URL: publicUrl }, login: false });
});

after(async () => {
  await s?.close();
  await provider?.close();
});

async function newPage(): Promise<Page> {
  const page = await (await s.browser.newContext({ reducedMotion: "reduce" })).newPage();
  page.setDefaultTimeout(15_000);
  return page;
}

async function onFailure(page: Page, name: string, fn: () => Promise<void>) {
  try {
    await fn();
  } catch (error) {
    await page
      .screenshot({ path: path.join(SCREENSHOTS, `${name}-failure.png`), fullPage: true })
      .catch(() => {});
    throw error;
  }
}

/** The provider's development pages: any login and password, then consent. */
async function signInAtProvider(page: Page, login: string) {
  await page.getByRole("link", { name: "Sign in with Example ID" }).click();
  await page.waitForURL(`${provider.issuer}/**`);
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("anything");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
}

const members = async () =>
  (
    (await s.api("GET", "/v2/members?per_page=100")).json as {
      email: string;
      grants: { access_level: string }[];
    }[]
  ).map((m) => m.email);

test(
  "single sign-on through a real OpenID provider: provisioned just in time, lands in the dashboard; replays and other domains are refused",
  { skip: unavailable ?? false, timeout: 180_000 },
  async () => {
    await s.api("PUT", "/v2/orgs/default/login-settings", {
      require_two_factor: false,
      sso: {
        provider_name: "Example ID",
        issuer: provider.issuer,
        client_id: CLIENT.id,
        client_secret: CLIENT.secret,
        allowed_domains: ["example.com"],
        new_member_access: "write",
        require_sso: false,
      },
    });
    const page = await newPage();
    await onFailure(page, "sso", async () => {
      const callbacks: string[] = [];
      page.on("request", (r) => {
        if (r.url().startsWith(`${s.server.baseUrl}/v2/auth/sso/callback`)) callbacks.push(r.url());
      });
      await page.goto(`${s.server.baseUrl}/login`);
      await signInAtProvider(page, "alice@example.com");
      await page.waitForURL(`${s.server.baseUrl}/o/default/projects`);
      await page.getByRole("heading", { name: "Projects", exact: true }).waitFor();
      await page.getByText("alice@example.com").first().waitFor();
      const alice = (
        (await s.api("GET", "/v2/members/alice@example.com")).json as {
          grants: { object_type: string; access_level: string }[];
        }
      ).grants;
      assert.deepEqual(
        alice.map((g) => [g.object_type, g.access_level]),
        [["org", "write"]],
      );

      // The provider's answer again: refused, back on the login page with the reason.
      assert.equal(callbacks.length, 1);
      const replay = await fetch(callbacks[0]!, {
        headers: { accept: "application/json" },
        redirect: "manual",
      });
      assert.equal(replay.status, 401);
      assert.equal(((await replay.json()) as { error_code: string }).error_code, "SSO_FAILED");
      await page.goto(callbacks[0]!);
      await page.waitForURL(/\/login\?sso_error=/);
      await page.getByText(/already used|not started in this browser/).waitFor();

      // An e-mail of a domain the organization does not allow: refused, nobody created.
      const other = await newPage();
      await other.goto(`${s.server.baseUrl}/login`);
      await signInAtProvider(other, "mallory@evil.test");
      await other.waitForURL(/\/login\?sso_error=/);
      await other
        .getByText("the e-mail domain evil.test is not allowed to sign in to this organization")
        .waitFor();
      assert.ok(!(await members()).includes("mallory@evil.test"));
    });
  },
);

test(
  "a second factor: enrol in the profile, log in with a code, a recovery code works once",
  { skip: unavailable ?? false, timeout: 180_000 },
  async () => {
    const page = await newPage();
    const logIn = async () => {
      await page.goto(`${s.server.baseUrl}/login`);
      await fillLogin(page);
    };
    const logOut = async () => {
      await page.getByRole("button", { name: "Log out" }).click();
      await page.waitForURL(/\/login/);
    };
    await onFailure(page, "totp", async () => {
      await logIn();
      await page.waitForURL(`${s.server.baseUrl}/o/default/projects`);
      await page.getByRole("link", { name: "Your profile" }).click();
      await page.getByRole("heading", { name: "Your profile" }).waitFor();
      await page.getByRole("button", { name: "Set up an authenticator app" }).click();
      await page.getByRole("img", { name: "QR code for the authenticator app" }).waitFor();
      const secret = (await page.getByLabel("Authenticator key").textContent()) ?? "";
      const code = (step = 0) => totpOf(secret, "").generate({ timestamp: Date.now() + step * 30_000 });
      await page.getByLabel("Code from the app").fill(code());
      await page.getByRole("button", { name: "Turn on" }).click();
      const codes = ((await page.getByLabel("Recovery codes").textContent()) ?? "").split("\n");
      assert.equal(codes.length, 10);
      await assertAccessible(page, "profile with recovery codes");

      // The organization's policy: the provider of the first test is shown; two-step verification is required.
      await page.getByRole("link", { name: "Login and SSO" }).click();
      await page.getByRole("heading", { name: "Login and SSO" }).waitFor();
      assert.equal(await page.getByLabel("Provider name").inputValue(), "Example ID");
      await assertAccessible(page, "login settings");
      await page.getByLabel("Require two-step verification for password logins").check();
      await page.getByRole("button", { name: "Save" }).click();
      await page.getByText("Login settings saved").waitFor();
      const saved = (await s.api("GET", "/v2/orgs/default/login-settings")).json as {
        require_two_factor: boolean;
        sso: { issuer: string };
      };
      assert.equal(saved.require_two_factor, true);
      assert.equal(saved.sso.issuer, provider.issuer, "the stored client secret was kept");
      await logOut();

      // The password, then the app's code (of the next step: the current one confirmed the enrolment).
      await logIn();
      await page.getByRole("heading", { name: "Two-step verification" }).waitFor();
      await page.getByLabel("Authentication code").fill(code(1));
      await page.getByRole("button", { name: "Verify" }).click();
      await page.waitForURL(`${s.server.baseUrl}/o/default/projects`);
      await logOut();

      // A recovery code, once.
      for (const attempt of [1, 2]) {
        await logIn();
        await page.getByRole("button", { name: "Use a recovery code instead" }).click();
        await page.getByLabel("Recovery code").fill(codes[0]!);
        await page.getByRole("button", { name: "Verify" }).click();
        if (attempt === 1) {
          await page.waitForURL(`${s.server.baseUrl}/o/default/projects`);
          await logOut();
        } else {
          await page.getByText("the code is wrong or already used").waitFor();
          assert.match(page.url(), /\/login/);
        }
      }
    });
  },
);
