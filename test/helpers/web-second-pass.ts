import assert from "node:assert/strict";
import { httpOk } from "./process.ts";
import { OWNER } from "./web-session.ts";

export const READER = { email: "reader@example.com", password: "another correct horse staple" };

export interface Seeded {
  /** The key named ci-deploy (it deleted the resource invoice). */
  ciKeyId: string;
}

const F = "/v2/facts/default/production";
const S = "/v2/schema/default/production";

/** Logs a member in through the API: the session's cookie and CSRF token, for writes made as that member. */
async function memberSession(base: string, who: { email: string; password: string }) {
  const res = await fetch(`${base}/v2/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: base },
    body: JSON.stringify(who),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  const { csrf_token } = (await res.json()) as { csrf_token: string };
  return (method: string, url: string, body: unknown) =>
    fetch(base + url, {
      method,
      headers: { cookie, "x-csrf-token": csrf_token, origin: base, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
}

/**
 * What the second pass's browser test and the documentation's screenshots look at: two projects, tenants acme and
 * globex, bob with a tenant role (given by the owner's session) and an instance role, 1,003 users, keys seeder and
 * ci-deploy (ci-deploy deleted the resource invoice), a read member.
 */
export async function seedSecondPass(base: string, adminKey: string): Promise<Seeded> {
  // Every write below is the seeder key's (the activity reads "key seeder ..."), or a member's.
  const seeder = (
    await httpOk(base, adminKey, "POST", "/v2/api-key", {
      name: "seeder",
      object_type: "org",
      access_level: "admin",
    })
  ).json as { id: string; secret: string };
  const api = (method: string, url: string, body?: unknown) => httpOk(base, seeder.secret, method, url, body);

  await api("POST", `${S}/resources`, { key: "invoice", name: "Invoice", actions: { read: {} } });
  await api("POST", `${S}/resources`, { key: "doc", name: "Document", actions: { read: {}, write: {} } });
  await api("POST", `${S}/resources/doc/roles`, {
    key: "owner",
    name: "Owner",
    permissions: ["read", "write"],
  });
  await api("POST", `${S}/roles`, { key: "viewer", name: "Viewer" });
  await api("POST", `${F}/tenants`, { key: "acme", name: "Acme" });
  await api("POST", `${F}/tenants`, { key: "globex", name: "Globex" });
  await api("POST", `${F}/users`, { key: "bob", email: "bob@example.com" });
  const many = Array.from({ length: 1002 }, (_, i) => ({ key: `user-${String(i).padStart(4, "0")}` }));
  for (let i = 0; i < many.length; i += 1000) {
    await api("POST", `${F}/bulk/users`, { operations: many.slice(i, i + 1000) });
  }
  await api("POST", `${F}/resource_instances`, { key: "q3", resource: "doc", tenant: "acme" });
  await api("POST", `${F}/role_assignments`, { user: "bob", role: "owner", resource_instance: "doc:q3" });

  // A second project.
  await api("POST", "/v2/projects", { key: "other", name: "Other" });
  await api("POST", "/v2/projects/other/envs", { key: "staging", name: "Staging" });
  await api("POST", "/v2/facts/other/staging/users", { key: "bob" });

  const ci = (await api("POST", "/v2/api-key", { name: "ci-deploy", object_type: "org" })).json as {
    id: string;
    secret: string;
  };
  await httpOk(base, ci.secret, "DELETE", `${S}/resources/invoice`);

  const asOwner = await memberSession(base, OWNER);
  const assigned = await asOwner("POST", `${F}/role_assignments`, {
    user: "bob",
    role: "viewer",
    tenant: "acme",
  });
  assert.equal(assigned.status, 200, await assigned.text());

  const org = (await api("GET", "/v2/orgs/active/org")).json as { id: string };
  const invited = (await api("POST", `/v2/orgs/${org.id}/invites`, [{ email: READER.email, role: "read" }]))
    .json as { success: { invite_code: string }[] };
  const accepted = await fetch(`${base}/v2/auth/invites/accept`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: base },
    body: JSON.stringify({ invite_code: invited.success[0]?.invite_code, password: READER.password }),
  });
  assert.equal(accepted.status, 200, await accepted.text());
  return { ciKeyId: ci.id };
}
