import type { Migration } from "kysely";
import * as m0001 from "./0001_foundation.ts";
import * as m0002 from "./0002_facts_and_schema.ts";

/** Forward-only, applied in name order. Never edit a migration that has shipped: add the next one. */
export const migrations: Record<string, Migration> = {
  "0001_foundation": m0001,
  "0002_facts_and_schema": m0002,
};
