import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import type { Page } from "playwright-core";
import { browserUnavailable, SCREENSHOTS } from "../helpers/browser.ts";
import { startDashboardSession, type DashboardSession } from "../helpers/web-session.ts";

// User-supplied text on the dashboard's pages: a long unbroken key, name or value wraps instead of widening the
// page, and a U+202E (right-to-left override) in a name is isolated, so it cannot reverse the text that follows it
// ("Users of ‮gnp.exe tenant" must not read as "tnanet exe.png fo sresU").
const unavailable = browserUnavailable();
const S = "/v2/schema/default/production";
const F = "/v2/facts/default/production";
const envUrl = (segment: string) => `${s.server.baseUrl}/o/default/p/default/e/production/${segment}`;
const RLO = "\u202E";
/** Reads as "exe.png" when shown as it is. */
const SPOOFED = `${RLO}gnp.exe`;
/** The longest key the API takes, as one unbroken run. */
const longKey = (c: string) => c.repeat(255);
const LONG_TEXT = "w".repeat(4096);
const LONG_VALUE = "v".repeat(5000);

let s: DashboardSession;
let page: Page;

before(async () => {
  if (unavailable) return;
  s = await startDashboardSession("display", { context: { viewport: { width: 1280, height: 900 } } });
  page = s.page;
});

after(async () => {
  await s?.close();
});

/**
 * What is wrong with the page's display: wider than the window, or a name's U+202E not isolated. Every text node
 * holding one must sit in an isolate (an element with computed `unicode-bidi: isolate`, such as `<bdi>`, or a
 * block of its own) in which only the spoofed name follows the override: nothing else it could reverse. A page
 * that should show a spoofed name and shows none fails too.
 */
async function displayProblems(p: Page, name: string, expectSpoofed = true): Promise<string[]> {
  const found = await p.evaluate(
    ({ rlo, tail }) => {
      const problems: string[] = [];
      const root = document.documentElement;
      if (root.scrollWidth > window.innerWidth) problems.push(`page is ${root.scrollWidth} px wide`);
      // (No named functions in here: tsx would wrap them in a helper the page does not have.)
      const ISOLATING = ["isolate", "isolate-override", "plaintext"];
      const INLINE = ["inline", "contents"];
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      let seen = 0;
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (!(node.textContent ?? "").includes(rlo)) continue;
        seen++;
        let isolate = node.parentElement;
        while (isolate) {
          const style = getComputedStyle(isolate);
          if (ISOLATING.includes(style.unicodeBidi) || !INLINE.includes(style.display)) break;
          isolate = isolate.parentElement;
        }
        const text = isolate?.textContent ?? "";
        if (
          !text
            .split(rlo)
            .slice(1)
            .every((after) => after === tail)
        ) {
          problems.push(
            `<${isolate?.tagName.toLowerCase()}> ${JSON.stringify(text.slice(0, 60))}: not isolated`,
          );
        }
      }
      return { problems, seen };
    },
    { rlo: RLO, tail: SPOOFED.slice(1) },
  );
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await p.screenshot({ path: path.join(SCREENSHOTS, `display-${name}.png`) });
  return [...found.problems, ...(expectSpoofed && found.seen === 0 ? ["no spoofed name on the page"] : [])];
}

test(
  "long unbroken strings wrap and right-to-left overrides in names are isolated on every page",
  { skip: unavailable ?? false, timeout: 300_000 },
  async (t) => {
    await s.api("POST", `${S}/resources`, {
      key: longKey("r"),
      name: longKey("R"),
      description: LONG_TEXT,
      actions: { [longKey("a")]: {}, read: {} },
      attributes: { [longKey("t")]: { type: "string", description: LONG_TEXT } },
    });
    await s.api("POST", `${S}/resources`, { key: "file", name: SPOOFED, actions: { read: {} } });
    await s.api("POST", `${S}/resources/file/roles`, { key: "owner", name: SPOOFED, permissions: ["read"] });
    await s.api("POST", `${S}/roles`, { key: longKey("o"), name: SPOOFED, description: LONG_TEXT });
    await s.api("POST", `${F}/tenants`, { key: longKey("n"), name: SPOOFED, description: LONG_TEXT });
    await s.api("POST", `${F}/users`, {
      key: longKey("u"),
      email: `${"e".repeat(200)}@example.com`,
      first_name: SPOOFED,
      last_name: longKey("L"),
      attributes: { note: LONG_VALUE },
    });
    await s.api("POST", `${F}/role_assignments`, {
      user: longKey("u"),
      role: longKey("o"),
      tenant: longKey("n"),
    });
    await s.api("POST", `${F}/resource_instances`, {
      resource: "file",
      key: longKey("i"),
      tenant: longKey("n"),
      attributes: { note: LONG_VALUE, name: SPOOFED },
    });

    const pages: [string, string, string, boolean?][] = [
      ["resources", "Resources", SPOOFED],
      ["roles", "Tenant roles", SPOOFED],
      ["policy", "Policy editor", SPOOFED],
      ["tenants", "Tenants", SPOOFED],
      ["users", "Users", SPOOFED],
      // Keys cannot hold a U+202E: the instance's attributes do, shown as JSON.
      ["instances", "Instances and relationships", longKey("i"), false],
    ];
    for (const [segment, title, shown, expectSpoofed] of pages) {
      await t.test(segment, async () => {
        await page.goto(envUrl(segment));
        await page.getByRole("heading", { name: title, exact: true }).waitFor();
        await page.getByText(shown).first().waitFor();
        assert.deepEqual(await displayProblems(page, segment, expectSpoofed), []);
      });
    }

    await t.test("a dialog named after a spoofed tenant", async () => {
      await page.goto(envUrl("tenants"));
      await page.getByRole("button", { name: `Users of ${longKey("n")}` }).click();
      await page.getByRole("dialog").waitFor();
      assert.deepEqual(await displayProblems(page, "tenant-users"), []);
    });

    await t.test("an instance's details", async () => {
      await page.goto(envUrl(`instances?instance=file:${longKey("i")}`));
      await page.getByRole("region", { name: `Instance file:${longKey("i")}` }).waitFor();
      await page.getByRole("table", { name: `Roles on file:${longKey("i")}` }).waitFor();
      assert.deepEqual(await displayProblems(page, "instance", false), []);
    });
  },
);
