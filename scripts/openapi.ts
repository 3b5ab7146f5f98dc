import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { migrateToLatest, openStore } from "../src/db/store.ts";
import { createSecretBox } from "../src/lib/secrets.ts";

export const OPENAPI_FILE = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../docs/openapi.json",
);

/** The OpenAPI document as the running server serves it, generated from the route schemas. */
export async function generateOpenApi(): Promise<string> {
  const store = openStore({});
  await migrateToLatest(store);
  const app = await buildApp({
    // The defaults: the document does not depend on the settings.
    config: loadConfig([], {}),
    store,
    box: createSecretBox("openapi-generation-only-key-0000000000"),
  });
  await app.ready();
  const doc = app.swagger();
  await app.close();
  await store.close();
  return JSON.stringify(doc, null, 2) + "\n";
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  fs.writeFileSync(OPENAPI_FILE, await generateOpenApi());
  console.log(`wrote ${path.relative(process.cwd(), OPENAPI_FILE)}`);
}
