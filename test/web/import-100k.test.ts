import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { browserUnavailable, checkPage } from "../helpers/browser.ts";
import { startDashboardSession, type DashboardSession } from "../helpers/web-session.ts";

// A CSV of 100,000 users, each with a role assignment, and five bad rows, imported from the role assignments page:
// progress is shown while it runs, the error report names exactly the bad rows, and the API holds the data. The
// server's event-loop delay during such an import is measured by `npm run bench -- csv-import`, not here.
const unavailable = browserUnavailable();
const USERS = 100_000;
const FACTS = "/v2/facts/default/production";
let s: DashboardSession;

before(async () => {
  if (unavailable) return;
  s = await startDashboardSession("import-100k");
  await s.api("POST", "/v2/schema/default/production/resources", {
    key: "document",
    name: "Document",
    actions: { read: {} },
  });
  await s.api("POST", "/v2/schema/default/production/roles", {
    key: "viewer",
    name: "Viewer",
    permissions: ["document:read"],
  });
  await s.api("POST", `${FACTS}/tenants`, { key: "acme", name: "Acme" });
});

after(async () => {
  await s?.close();
});

/** The good rows, with the bad ones at their lines (the header is line 1); the bad rows' lines and keys. */
function buildCsv(): { csv: string; bad: [number, string][] } {
  const badRows = new Map<number, string>([
    [10, "bad key!,,viewer,acme,"],
    [50_000, "badrole-1,,nosuchrole,acme,"],
    [75_000, "notenant-1,,viewer,nowhere,"],
    [99_000, "bademail-1,x@,viewer,acme,"],
    [USERS + 6, "expired-1,,viewer,acme,2001-01-01T00:00:00Z"],
  ]);
  const lines = ["key,email,role,tenant,expires_at"];
  for (let i = 0; lines.length < USERS + badRows.size + 1;) {
    const bad = badRows.get(lines.length + 1);
    if (bad) lines.push(bad);
    else lines.push(`user-${String(i).padStart(6, "0")},user-${i++}@example.com,viewer,acme,`);
  }
  return { csv: lines.join("\n"), bad: [...badRows].map(([line, row]) => [line, row.split(",")[0]!]) };
}

test(
  "a CSV of 100,000 users with assignments imports with progress and a correct error report",
  { skip: unavailable ?? false, timeout: 900_000 },
  async () => {
    const { page } = s;
    const { csv, bad } = buildCsv();
    await page.goto(`${s.server.baseUrl}/o/default/p/default/e/production/role-assignments`);
    await page.getByRole("heading", { name: "Role assignments" }).waitFor();
    await page.getByRole("button", { name: "Import CSV" }).click();
    const dialog = page.getByRole("dialog");
    await dialog
      .locator('input[type="file"]')
      .setInputFiles({ name: "users.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });

    const seen = new Set<string>();
    await dialog.getByRole("button", { name: "Import", exact: true }).click();
    const status = dialog.getByRole("status", { name: "Import status" });
    for (;;) {
      const text = await status.innerText().catch(() => "");
      seen.add(text.replace(/\d[\d,]*/g, "N"));
      if (text.startsWith("Import finished")) break;
      const failure = dialog.getByRole("alert");
      if ((await failure.count()) > 0) assert.fail(`the import failed: ${await failure.innerText()}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }

    assert.ok(
      [...seen].some((t) => t.startsWith("Importing (N%)")),
      `no progress was shown: ${[...seen].join(" | ")}`,
    );
    assert.match(
      await status.innerText(),
      /100,005 rows read, 100,001 users and 100,000 assignments imported, 5 rows refused\./,
    );
    const report = await dialog
      .getByRole("table", { name: "Refused rows" })
      .locator("tbody tr")
      .evaluateAll((rows) =>
        rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent ?? "")),
      );
    assert.deepEqual(
      report.map(([line, key]) => [Number(line), key]),
      bad,
    );
    assert.match(report[2]![2]!, /nowhere/);
    await checkPage(page, "role-assignments-import-100k");

    const count = async (url: string) =>
      ((await s.api("GET", url)).json as { total_count: number }).total_count;
    assert.equal(await count(`${FACTS}/users?per_page=1`), USERS + 1);
    assert.equal(await count(`${FACTS}/role_assignments?per_page=1&include_total_count=true`), USERS);
    s.log.assertPublicApiOnly(s.server.baseUrl);
  },
);
