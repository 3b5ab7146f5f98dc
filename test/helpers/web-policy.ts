import assert from "node:assert/strict";
import type { Locator, Page } from "playwright-core";
import { httpOk } from "./process.ts";

/** Where the model is built, and how its steps are checked through the API. */
export interface PolicyModelPlace {
  /** The server's origin, e.g. http://127.0.0.1:8123 (the dashboard and the API share it). */
  baseUrl: string;
  /** An API key that may read the environment: every step is checked through the API with it. */
  apiKey: string;
  /** Organization, project and environment keys of the dashboard's URL (/o/{org}/p/{proj}/e/{env}/...). */
  org: string;
  proj: string;
  env: string;
}

/** What `buildRebacAbacModel` built, by key, for the steps chained after it (users, tuples, checks). */
export const POLICY_MODEL = {
  resources: { folder: ["read", "write"], file: ["delete", "read", "write"] },
  relation: { resource: "file", key: "parent", subject: "folder" },
  resourceRoles: { "folder#editor": ["read", "write"], "file#editor": ["read", "write"] },
  derivation: { role: "file#editor", from: "folder#editor", via: "parent" },
  tenantRole: { key: "viewer", permissions: ["folder:read", "file:read"] },
  userSet: { key: "finance", conditions: { allOf: [{ "user.department": { equals: "finance" } }] } },
  resourceSet: {
    key: "finance_files",
    resource: "file",
    conditions: { allOf: [{ "resource.department": { equals: "finance" } }] },
  },
  setRule: { user_set: "finance", permission: "file:read", resource_set: "finance_files" },
} as const;

/** Picks options of a Mantine Select or MultiSelect by their text. */
export async function choose(page: Page, input: Locator, ...options: string[]): Promise<void> {
  await input.click();
  for (const option of options) await page.getByRole("option", { name: option, exact: true }).click();
  // Closes the dropdown without Escape (which would close a modal around it).
  await input.press("Tab");
}

/**
 * Builds a small ReBAC + ABAC model only through the dashboard, in an environment that does not hold these keys
 * yet, and checks each step through the API: resource types `folder` (actions read, write) and `file` (delete, read,
 * write, and a `department` attribute), the relation `file` parent -> `folder`, resource roles `folder#editor` and
 * `file#editor` (read, write), the derivation "editor of a folder is editor of the files whose parent it is", the
 * tenant role `viewer` granted read on both in the policy editor, the user set `finance` (user.department ==
 * "finance"), the resource set `finance_files` (files with resource.department == "finance") and the set rule
 * finance may read finance_files. `page` must be logged in as a member who may write the environment; it is
 * left on the ABAC page. See `POLICY_MODEL` for the keys.
 */
export async function buildRebacAbacModel(page: Page, place: PolicyModelPlace): Promise<void> {
  const { baseUrl, apiKey, org, proj, env } = place;
  const S = `/v2/schema/${proj}/${env}`;
  const api = async (url: string) => (await httpOk(baseUrl, apiKey, "GET", url)).json;
  const go = async (segment: string, heading: string) => {
    await page.goto(`${baseUrl}/o/${org}/p/${proj}/e/${env}/${segment}`);
    await page.getByRole("heading", { name: heading, exact: true }).waitFor();
  };
  const dialog = page.getByRole("dialog");
  const submit = async (name: string) => {
    await dialog.getByRole("button", { name, exact: true }).click();
    await dialog.waitFor({ state: "detached" });
  };

  await go("resources", "Resources");
  for (const [key, actions] of Object.entries(POLICY_MODEL.resources)) {
    await page.getByRole("button", { name: "New resource" }).click();
    await dialog.getByRole("textbox", { name: "Key", exact: true }).fill(key);
    await dialog
      .getByRole("textbox", { name: "Name", exact: true })
      .fill(key[0]!.toUpperCase() + key.slice(1));
    await dialog.getByLabel("Actions").fill(actions.join(", "));
    await submit("Create");
    await page.getByRole("region", { name: `Resource ${key}` }).waitFor();
    const read = await api(`${S}/resources/${key}`);
    assert.deepEqual(Object.keys(read.actions).sort(), [...actions]);
  }
  const folder = page.getByRole("region", { name: "Resource folder" });
  const file = page.getByRole("region", { name: "Resource file" });

  await file.getByRole("button", { name: "Add attribute to file" }).click();
  await dialog.getByRole("textbox", { name: "Key", exact: true }).fill("department");
  await dialog.getByLabel("Description").fill("the department owning the file");
  await submit("Add");
  await file.getByRole("cell", { name: "department", exact: true }).waitFor();
  assert.equal((await api(`${S}/resources/file`)).attributes.department?.type, "string");

  await file.getByRole("button", { name: "Add relation to file" }).click();
  await dialog.getByRole("textbox", { name: "Key", exact: true }).fill("parent");
  await choose(page, dialog.getByLabel("Related resource"), "folder");
  await submit("Add");
  await file.getByRole("table", { name: "Relations of file" }).waitFor();
  assert.equal((await api(`${S}/resources/file`)).relations.parent?.resource, "folder");

  for (const [region, resource] of [
    [folder, "folder"],
    [file, "file"],
  ] as const) {
    await region.getByRole("button", { name: `Add role to ${resource}` }).click();
    await dialog.getByRole("textbox", { name: "Key", exact: true }).fill("editor");
    await dialog.getByRole("textbox", { name: "Name", exact: true }).fill("Editor");
    await choose(page, dialog.getByLabel("Permissions"), "read", "write");
    await submit("Create");
    await region.getByRole("table", { name: `Roles of ${resource}` }).waitFor();
    const role = await api(`${S}/resources/${resource}/roles/editor`);
    assert.deepEqual([...role.permissions].sort(), ["read", "write"]);
  }

  await file.getByRole("button", { name: "Derive file#editor" }).click();
  await choose(
    page,
    dialog.getByLabel("Users with this role on the related instance"),
    "folder#editor via parent",
  );
  await submit("Add");
  await file.getByText("folder#editor via parent").waitFor();
  const derived = await api(`${S}/resources/file/roles/editor`);
  assert.deepEqual(
    derived.granted_to.users_with_role.map((d: Record<string, string>) => [
      d["role"],
      d["on_resource"],
      d["linked_by_relation"],
    ]),
    [["editor", "folder", "parent"]],
  );

  await go("roles", "Tenant roles");
  await page.getByRole("button", { name: "New role" }).click();
  await dialog.getByRole("textbox", { name: "Key", exact: true }).fill(POLICY_MODEL.tenantRole.key);
  await dialog.getByRole("textbox", { name: "Name", exact: true }).fill("Viewer");
  await submit("Create");
  await page.getByRole("cell", { name: POLICY_MODEL.tenantRole.key, exact: true }).waitFor();
  assert.equal((await api(`${S}/roles/viewer`)).name, "Viewer");

  await go("policy", "Policy editor");
  for (const resource of ["folder", "file"]) {
    await page.getByRole("checkbox", { name: `viewer may read ${resource}`, exact: true }).check();
  }
  await page.getByRole("button", { name: "Save 2 changes" }).click();
  await page.getByRole("button", { name: "Save", exact: true }).waitFor();
  assert.deepEqual(
    [...(await api(`${S}/roles/viewer`)).permissions].sort(),
    [...POLICY_MODEL.tenantRole.permissions].sort(),
  );

  await go("abac", "ABAC");
  for (const set of [POLICY_MODEL.userSet, POLICY_MODEL.resourceSet]) {
    const isUserSet = !("resource" in set);
    await page.getByRole("button", { name: isUserSet ? "New user set" : "New resource set" }).click();
    await dialog.getByRole("textbox", { name: "Key", exact: true }).fill(set.key);
    await dialog.getByRole("textbox", { name: "Name", exact: true }).fill(set.key);
    if (!isUserSet) await choose(page, dialog.getByLabel("Resource"), set.resource);
    await dialog.getByLabel("Attribute 1").fill(isUserSet ? "user.department" : "resource.department");
    await dialog.getByLabel("Value 1", { exact: true }).fill("finance");
    await dialog.getByText("Valid", { exact: true }).waitFor();
    await dialog.getByRole("button", { name: "Save", exact: true }).click();
    await dialog.waitFor({ state: "detached" });
    await page.getByRole("cell", { name: set.key, exact: true }).first().waitFor();
    const read = await api(`${S}/condition_sets/${set.key}`);
    assert.deepEqual(read.conditions, set.conditions);
    assert.equal(read.type, isUserSet ? "userset" : "resourceset");
  }

  const rule = page.getByRole("checkbox", { name: "finance may read finance_files", exact: true });
  await rule.check();
  await page.waitForFunction(() => !document.querySelector('input[type="checkbox"]:disabled'));
  const rules = await api(`/v2/facts/${proj}/${env}/set_rules?user_set=finance`);
  assert.deepEqual(
    rules.map((r: Record<string, string>) => [r["user_set"], r["permission"], r["resource_set"]]),
    [[POLICY_MODEL.setRule.user_set, POLICY_MODEL.setRule.permission, POLICY_MODEL.setRule.resource_set]],
  );
}
