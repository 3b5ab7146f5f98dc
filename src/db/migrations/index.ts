import type { Migration } from "kysely";
import * as m0001 from "./0001_foundation.ts";

/** Forward-only, applied in name order. Never edit a migration that has shipped: add the next one. */
export const migrations: Record<string, Migration> = {
  "0001_foundation": m0001,
};
