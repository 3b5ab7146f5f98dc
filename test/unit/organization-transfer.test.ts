import { test } from "node:test";
import assert from "node:assert/strict";
import { createTestEnv } from "../helpers/app.ts";
import {
  DEPLOYMENT_TABLES,
  DERIVED_TABLES,
  LEFT_BEHIND,
  TRANSFERRED_TABLES,
} from "../../src/domain/organization-transfer.ts";

test("organization transfer: every table of the schema is moved, left behind or the deployment's own", async () => {
  const env = await createTestEnv("sqlite");
  try {
    const tables = (await env.store.db.introspection.getTables())
      .map((t) => t.name)
      .filter((name) => name !== "gatehouse_migrations")
      .sort();
    const named = [...TRANSFERRED_TABLES, ...LEFT_BEHIND, ...DEPLOYMENT_TABLES, ...DERIVED_TABLES].sort();
    assert.deepEqual(tables, named, "a new table must say whether an organization's move takes it along");
  } finally {
    await env.app.close();
    await env.store.close();
  }
});
