import fs from "node:fs";
import path from "node:path";
import type { FeedEntry } from "../../../changes/feed.ts";
import type { DataSnapshot } from "../../storage.ts";
import type { EnvironmentIds } from "./sync-state.ts";

/*
 * Versions before the streamed snapshot (issue 24) kept the copy as one JSON document, `pdp-snapshot.json`, with the
 * changes inside it. A PDP upgraded while its control plane is away still starts from such a copy; the next
 * snapshot it receives replaces it (and removes this file).
 */

/** The document: the environment, its data at one revision and the changes since. */
export interface LegacyState extends EnvironmentIds {
  base: DataSnapshot;
  changes: FeedEntry[];
}

export const legacyFile = (dataDir: string) => path.join(dataDir, "pdp-snapshot.json");

/** The copy an older version wrote, or undefined when there is none (or it cannot be read). */
export function readLegacyState(file: string): LegacyState | undefined {
  try {
    const stored = JSON.parse(fs.readFileSync(file, "utf8")) as LegacyState;
    return { ...stored, changes: stored.changes ?? [] };
  } catch {
    return undefined;
  }
}
