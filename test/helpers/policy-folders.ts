import assert from "node:assert/strict";
import type { TestEnv } from "./app.ts";

/*
 * The policy-as-code suites' environment: a folder/document policy with facts, and the edit a pull request would
 * make to its exported file.
 */

/** A folder/document policy with facts: ann is an admin of t1, bob reads folder f1, the parent of document d1. */
export async function seedFolders(t: TestEnv, envKey: string): Promise<void> {
  const ok = async (path: string, body: unknown) => {
    const res = await t.call(t.acme.adminKey, "POST", path, body);
    assert.ok(res.status < 300, `${path}: ${res.body}`);
  };
  const schema = `/v2/schema/${t.acme.projectId}/${envKey}`;
  const facts = `/v2/facts/${t.acme.projectId}/${envKey}`;
  await ok(`${schema}/resources`, {
    key: "folder",
    name: "Folder",
    actions: { read: {} },
    roles: { reader: { name: "Reader", permissions: ["read"] } },
  });
  await ok(`${schema}/resources`, {
    key: "document",
    name: "Document",
    actions: { read: {}, delete: {} },
    relations: { parent: "folder" },
    roles: { viewer: { name: "Viewer", permissions: ["read"] } },
  });
  await ok(`${schema}/roles`, {
    key: "admin",
    name: "Admin",
    permissions: ["document:read", "document:delete"],
  });
  await ok(`${facts}/tenants`, { key: "t1", name: "T1" });
  for (const key of ["ann", "bob"]) await ok(`${facts}/users`, { key });
  await ok(`${facts}/role_assignments`, { user: "ann", role: "admin", tenant: "t1" });
  await ok(`${facts}/resource_instances`, { key: "f1", resource: "folder", tenant: "t1" });
  await ok(`${facts}/resource_instances`, { key: "d1", resource: "document", tenant: "t1" });
  await ok(`${facts}/relationship_tuples`, {
    subject: "folder:f1",
    relation: "parent",
    object: "document:d1",
  });
  await ok(`${facts}/role_assignments`, {
    user: "bob",
    role: "reader",
    resource_instance: "folder:f1",
    tenant: "t1",
  });
}

/** The exported file, edited: admins lose document:delete, folder readers become document viewers. */
export function editPolicy(text: string): string {
  const edited = text
    .replace("      - document:delete\n", "")
    .replace(
      "        permissions:\n          - read\n    relations:",
      "        permissions:\n          - read\n        derived_from:\n          - role: reader\n" +
        "            on_resource: folder\n            linked_by_relation: parent\n    relations:",
    );
  assert.notEqual(edited, text);
  return edited;
}
