import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { checkPage } from "./browser.ts";

/** What the dashboard-built part of the explore test needs to know. */
export interface ExploreOptions {
  /** The server's base URL, e.g. http://127.0.0.1:PORT. The server must run its embedded PDP (a PDP port). */
  baseUrl: string;
  /** Keys of the organization, project and environment the model lives in (default: default/default/production). */
  org?: string;
  proj?: string;
  env?: string;
  /**
   * The page, logged in as a member who may write in that environment. The environment must already hold: resource
   * types `folder` (action `read`, `write`; role `editor`) and `file` (actions `read`, `write`, `delete`; relation
   * `parent` to folder; role `editor` granted to folder editors through `parent`, without `delete`). Nothing else
   * is assumed; the users and instances below are created here and must not exist yet.
   */
  page: Page;
  /** The user, folder and file keys to create (defaults: alice, carol, docs, report). */
  names?: Partial<ExploreNames>;
  /** The attributes of the `attributed` user, as typed into the editor (default `{"department": "legal"}`). */
  attributes?: string;
}

export interface ExploreNames {
  /** gets folder#editor on the folder */
  editor: string;
  /** has the options' `attributes` and no role */
  attributed: string;
  folder: string;
  file: string;
}

/**
 * Through the dashboard only: users (one with an attribute), a folder and a file instance, the tuple
 * folder -> parent -> file, folder#editor for the editor on the folder; then, in the playground, an allow whose
 * grant path names the derivation (folder#editor -> file#editor via parent) and a deny with its closest miss; then
 * both decisions in the decision log. Screenshots and axe checks of each page. Returns the names used.
 */
export async function exploreThroughDashboard(options: ExploreOptions): Promise<ExploreNames> {
  const { page, baseUrl } = options;
  const names: ExploreNames = {
    editor: "alice",
    attributed: "carol",
    folder: "docs",
    file: "report",
    ...options.names,
  };
  const envUrl = `${baseUrl}/o/${options.org ?? "default"}/p/${options.proj ?? "default"}/e/${options.env ?? "production"}`;
  const dialog = page.getByRole("dialog");
  const heading = (name: string) => page.getByRole("heading", { name, exact: true });
  const pick = async (label: string, option: string) => {
    await page.getByRole("combobox", { name: label, exact: true }).click();
    await page.getByRole("option", { name: option, exact: true }).click();
  };

  // The environment's landing page: counts and the PDP's revision.
  await page.goto(envUrl);
  await page.waitForURL(/\/overview$/);
  await heading("Overview").waitFor();
  await page.getByLabel("PDP status").getByText("in sync").waitFor();
  await checkPage(page, "explore-overview");

  // Users, one with an attribute.
  await page.getByRole("link", { name: "Users", exact: true }).click();
  await heading("Users").waitFor();
  for (const [key, attributes] of [
    [names.editor, ""],
    [names.attributed, options.attributes ?? '{"department": "legal"}'],
  ] as const) {
    await page.getByRole("button", { name: "New user" }).click();
    await dialog.getByLabel("Key").fill(key);
    if (attributes) await dialog.getByLabel("Attributes").fill(attributes);
    await dialog.getByRole("button", { name: "Create" }).click();
    await dialog.waitFor({ state: "detached" });
    await page.getByRole("cell", { name: key, exact: true }).waitFor();
  }

  // Instances, the tuple, the role on the folder.
  await page.getByRole("link", { name: "Instances", exact: true }).click();
  await heading("Instances and relationships").waitFor();
  for (const [type, key] of [
    ["folder", names.folder],
    ["file", names.file],
  ] as const) {
    await page.getByRole("button", { name: "New instance" }).click();
    await dialog.getByLabel("Resource type").click();
    await page.getByRole("option", { name: type, exact: true }).click();
    await dialog.getByLabel("Key").fill(key);
    await dialog.getByRole("button", { name: "Create" }).click();
    await dialog.waitFor({ state: "detached" });
    await page.getByRole("cell", { name: `${type}:${key}`, exact: true }).waitFor();
  }
  await page.getByRole("button", { name: "New tuple" }).click();
  await dialog.getByLabel("Subject").fill(`folder:${names.folder}`);
  await dialog.getByLabel("Relation").fill("parent");
  await dialog.getByLabel("Object").fill(`file:${names.file}`);
  await dialog.getByRole("button", { name: "Create" }).click();
  await dialog.waitFor({ state: "detached" });
  const tuples = page.getByRole("table", { name: "Tuples" });
  await tuples.getByRole("cell", { name: `file:${names.file}`, exact: true }).waitFor();

  await page.getByRole("button", { name: `Open folder:${names.folder}` }).click();
  await page.getByRole("button", { name: "Assign a role" }).click();
  await dialog.getByLabel("User").fill(names.editor);
  await dialog.getByLabel("Role").click();
  await page.getByRole("option", { name: "editor", exact: true }).click();
  await dialog.getByRole("button", { name: "Assign" }).click();
  await dialog.waitFor({ state: "detached" });
  await page
    .getByRole("table", { name: `Roles on folder:${names.folder}` })
    .getByRole("cell", { name: names.editor, exact: true })
    .waitFor();
  // The file's neighbourhood: the tuple in, and folder#editor derived onto it.
  await page.getByRole("button", { name: `Open file:${names.file}` }).click();
  const derived = page.getByRole("table", { name: `Roles on file:${names.file}` });
  await derived.getByRole("cell", { name: "file#editor (derived)" }).waitFor();
  const graph = page.getByRole("figure", { name: /^Graph around file:/ });
  await graph.waitFor();
  assert.match(
    (await graph.getAttribute("aria-label")) ?? "",
    new RegExp(`user ${names.editor} has file#editor on file:${names.file}, derived from folder#editor`),
  );
  await page.locator(".react-flow__node").first().waitFor();
  await checkPage(page, "explore-instances");

  // The playground: an allow through the derivation, a deny with its closest miss.
  await page.getByRole("link", { name: "Check playground", exact: true }).click();
  await heading("Check playground").waitFor();
  const combo = async (label: string, value: string) => {
    await page.getByRole("combobox", { name: label, exact: true }).fill(value);
    await page.keyboard.press("Escape");
  };
  const check = async (action: string) => {
    await combo("User", names.editor);
    await combo("Action", action);
    await page.getByLabel("Instance key").fill(names.file);
    await page.getByRole("button", { name: "Check", exact: true }).click();
  };
  await pick("Resource type", "File (file)");
  await check("write");
  const decision = page.getByRole("region", { name: "Decision" });
  await decision.getByText("Allowed").waitFor();
  const path = (await page.getByLabel("Grant path").textContent()) ?? "";
  assert.match(path, /folder#editor → file#editor via parent/);
  assert.match(path, new RegExp(`folder#editor on folder:${names.folder} → via parent`));
  await decision.getByText(/Decided at environment revision \d+/).waitFor();
  await checkPage(page, "explore-playground-allow");

  await check("delete");
  await decision.getByText("Denied").waitFor();
  assert.equal(
    (await page.getByLabel("Closest miss").textContent())?.trim(),
    `Closest miss (NO_PERMISSION): user '${names.editor}' has role editor on file:${names.file}, which lacks file:delete`,
  );
  await checkPage(page, "explore-playground-deny");

  // What can this user do.
  await page.getByRole("button", { name: "What can this user do" }).click();
  const permissions = page.getByRole("table", { name: "Permissions" });
  await permissions.getByRole("cell", { name: `file:${names.file}`, exact: true }).waitFor();

  // The decision log lists both (it is written within a fraction of a second).
  await page.getByRole("link", { name: "Decision log", exact: true }).click();
  await heading("Decision log").waitFor();
  await page.getByLabel("User", { exact: true }).fill(names.editor);
  const rows = page.getByRole("table", { name: "Decisions" });
  for (let tries = 0; ; tries++) {
    await page.getByRole("button", { name: "Apply" }).click();
    const text = (await rows.textContent().catch(() => "")) ?? "";
    if (/Allowed/.test(text) && /Denied/.test(text)) break;
    assert.ok(tries < 20, "the decision log did not list both decisions");
    await page.waitForTimeout(300);
  }
  const denied = rows.getByRole("row").filter({ hasText: "Denied" }).filter({ hasText: "delete" });
  await denied
    .getByRole("button", { name: /^Details of/ })
    .first()
    .click();
  await dialog.getByText(/denied \(NO_PERMISSION\)/).waitFor();
  await checkPage(page, "explore-decision-log-detail");
  await dialog
    .getByRole("button", { name: "Close" })
    .first()
    .click()
    .catch(() => page.keyboard.press("Escape"));
  await page
    .getByLabel("Checks per minute, allowed and denied")
    .or(page.locator(".recharts-wrapper"))
    .first()
    .waitFor();
  await checkPage(page, "explore-decision-log");
  return names;
}
