import type { Insertable } from "kysely";
import type { ApiLogTable } from "../../db/types.ts";
import { timeOfId } from "../../lib/ids.ts";
import { toTimestamp } from "../../lib/time.ts";
import type { DecisionLogChunk } from "../../pdp/storage.ts";

/*
 * The records log export ships, one JSON object per line (NDJSON), whatever the sink: `log` says which log it is
 * from, `timestamp` when it happened, the rest are the fields the log stores. API log records are its stored rows,
 * so what the writer redacted (credentials, secret fields of bodies) stays redacted.
 */

export type ExportedLog = "decision" | "api";

/** An entry as a chunk holds it (a shipped one may name its PDP and time, which the line says once). */
interface StoredDecision {
  id: string;
  pdp_id?: unknown;
  timestamp?: unknown;
}

/** A decision log chunk's entries as lines, each with its environment, PDP and time. */
export function decisionLines(chunk: DecisionLogChunk): Buffer {
  const { entries: bytes } = chunk;
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("utf8");
  const entries = JSON.parse(text) as StoredDecision[];
  const head = `{"log":"decision","environment_id":${JSON.stringify(chunk.environmentId)},"pdp_id":${JSON.stringify(chunk.pdpId)},"timestamp":"`;
  // Entries of one chunk share their milliseconds often: the time's text is made once per millisecond.
  let ms = -1;
  let at = "";
  let out = "";
  for (const stored of entries) {
    // The embedded PDP's entries name neither their PDP nor their time; shipped ones may (the line says each once).
    let entry: StoredDecision = stored;
    let given: unknown;
    if (stored.pdp_id !== undefined || stored.timestamp !== undefined) {
      const { pdp_id: _pdp, timestamp, ...rest } = stored;
      entry = rest as StoredDecision;
      given = timestamp;
    }
    if (typeof given === "string") {
      ms = -1;
      at = given;
    } else if (timeOfId(stored.id) !== ms) {
      ms = timeOfId(stored.id);
      at = toTimestamp(new Date(ms));
    }
    // The entry's own fields after the head's, from its `{` on.
    out += `${head}${at}",${JSON.stringify(entry).slice(1)}\n`;
  }
  return Buffer.from(out, "utf8");
}

/** API log rows (as the writer stored them) as lines. */
export function apiLines(rows: Insertable<ApiLogTable>[]): Buffer {
  let text = "";
  for (const row of rows) text += `${JSON.stringify({ log: "api", ...row })}\n`;
  return Buffer.from(text, "utf8");
}

/** The records of NDJSON bytes, parsed (the OTLP sink). */
export function parseLines(bytes: Uint8Array): Record<string, unknown>[] {
  return Buffer.from(bytes)
    .toString("utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** NDJSON bytes as the text of one JSON array (a record's JSON holds no line break). */
export function asJsonArray(bytes: Uint8Array): string {
  const text = Buffer.from(bytes).toString("utf8").replace(/\n$/, "");
  return `[${text.replaceAll("\n", ",")}]`;
}
