import { test } from "node:test";
import assert from "node:assert/strict";
import { openStore } from "../../src/db/store.ts";
import { createSecretBox } from "../../src/lib/secrets.ts";
import { createOrganizationRecords } from "../../src/domain/organization-records.ts";
import { createEmbeddedPdp } from "../../src/pdp/embedded.ts";
import { databasePdpStorage } from "../../src/domain/pdp-storage.ts";
import { buildPdpApp } from "../../src/pdp/http/server.ts";
import { PUBLIC_URL, buildTestApp } from "../helpers/app.ts";
import { DIALECTS, freshStore } from "../helpers/stores.ts";
import { pgRelay } from "../helpers/pg-relay.ts";

// PostgreSQL only: a SQLite database cannot be away (the file is in the process), and its readers are never
// blocked by a writer, so the PDP's lookups there do not fail; the e2e outage test covers the whole server.
const postgres = DIALECTS.find((d) => d.dialect === "postgres");

test(
  "embedded PDP with PostgreSQL away: keys it has seen answer from memory past the key cache, an unseen key gets 503, a key revoked through this process does not answer; the decision log waits and ships",
  { skip: postgres?.skip ?? "no PostgreSQL" },
  async () => {
    const direct = await freshStore("postgres");
    const relay = await pgRelay();
    const store = openStore({
      databaseUrl: relay.url,
      pgSchema: direct.location.pgSchema as string,
      pgPoolSize: 4,
    });
    const box = createSecretBox("test-secret-key-that-is-long-enough-000");
    const org = await createOrganizationRecords(direct.db, box, { key: "acme", name: "Acme" });
    await createOrganizationRecords(direct.db, box, { key: "globex", name: "Globex" });
    const app = await buildTestApp(store, box);
    const pdp = createEmbeddedPdp({
      storage: databasePdpStorage(store),
      notifier: app.notifier,
      publicUrl: PUBLIC_URL,
      controlPlane: () => app,
    });
    const pdpApp = await buildPdpApp(pdp);
    const api = async (method: "GET" | "POST", url: string, body?: object) => {
      const res = await app.inject({
        method,
        url: `/v2${url}`,
        headers: { authorization: `Bearer ${org.adminKeySecret}` },
        ...(body && { payload: body }),
      });
      assert.ok(res.statusCode < 300, `${method} ${url}: ${res.statusCode} ${res.body}`);
      return res.json();
    };
    const envKey = async (environment: string) =>
      (
        await api("POST", "/api-key", {
          object_type: "env",
          project_id: "default",
          environment_id: environment,
          name: environment,
        })
      ).secret as string;
    const check = async (key: string, user = "alice") => {
      const res = await pdpApp.inject({
        method: "POST",
        url: "/allowed",
        headers: { authorization: `Bearer ${key}` },
        payload: { user, action: "read", resource: "document" },
      });
      return { status: res.statusCode, retryAfter: res.headers["retry-after"], json: res.json() };
    };
    try {
      await api("POST", "/schema/default/production/resources", {
        key: "document",
        name: "D",
        actions: { read: {} },
      });
      await api("POST", "/schema/default/production/roles", {
        key: "viewer",
        name: "V",
        permissions: ["document:read"],
      });
      await api("POST", "/facts/default/production/users", { key: "alice" });
      await api("POST", "/facts/default/production/role_assignments", {
        user: "alice",
        role: "viewer",
        tenant: "default",
      });
      const seen = await envKey("production");
      const unseen = await envKey("development");
      assert.equal((await check(seen)).json.allow, true);

      await relay.cut();
      // Past the PDP's key cache (5 s), so the key must be looked up again, and the database is away.
      await new Promise((resolve) => setTimeout(resolve, 5200));
      const during = await check(seen);
      assert.equal(during.status, 200, JSON.stringify(during.json));
      assert.equal(during.json.allow, true);
      assert.equal((await check(seen, "mallory")).json.allow, false);
      const notSeen = await check(unseen);
      assert.equal(notSeen.status, 503, JSON.stringify(notSeen.json));
      assert.equal(notSeen.retryAfter, "5");
      assert.equal(notSeen.json.error_code, "SERVICE_UNAVAILABLE");
      // AuthZEN's routes answer an outage alike (their own handler only renames 422 to 400).
      const authzen = await pdpApp.inject({
        method: "POST",
        url: "/access/v1/evaluation",
        headers: { authorization: `Bearer ${unseen}` },
        payload: {
          subject: { type: "user", id: "alice" },
          action: { name: "read" },
          resource: { type: "document", id: "d1" },
        },
      });
      assert.equal(authzen.statusCode, 503, authzen.body);
      assert.equal(authzen.headers["retry-after"], "5");
      assert.ok(pdp.decisions.queued > 0, "decisions wait for the database");
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.equal(pdp.decisions.dropped, 0, "more than five failed shipments give nothing up");

      // What a revocation in this process does (its hook clears the PDP's keys): no answer from memory for it.
      pdp.invalidateKeys();
      assert.equal((await check(seen)).status, 503);

      await relay.mend();
      assert.equal((await check(seen)).json.allow, true);
      const deadline = Date.now() + 10_000;
      for (;;) {
        const logs = await api("GET", "/pdps/default/production/audit_logs?users=mallory");
        if (logs.total_count > 0) break;
        assert.ok(Date.now() < deadline, "the decision made while the database was away is stored after");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await pdpApp.close();
      await pdp.close();
      await app.close();
      await store.close();
      await relay.close();
      await direct.close();
    }
  },
);
