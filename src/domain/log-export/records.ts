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

/** A bulk entry: its checks, and the query and revision they share. */
interface StoredBulk {
  query: unknown;
  revision: unknown;
  bulk: StoredDecision[];
}

/**
 * A decision log chunk's decisions as lines, each with its environment, PDP and time (a check of a bulk entry is a
 * line of its own, with its bulk's query and revision). A chunk the logger wrote says where each decision is
 * (`spans`): its bytes are copied, not parsed; others (shipped by a standalone PDP) are parsed.
 */
export function decisionLines(chunk: DecisionLogChunk): Buffer {
  const head = `{"log":"decision","environment_id":${JSON.stringify(chunk.environmentId)},"pdp_id":${JSON.stringify(chunk.pdpId)},"timestamp":"`;
  return chunk.spans ? copiedLines(chunk, chunk.spans, head) : parsedLines(chunk, head);
}

/** `toTimestamp` of an id's time, made once per millisecond (entries of one chunk share theirs often). */
function idTimes() {
  let ms = -1;
  let at = "";
  return (id: string) => {
    const time = timeOfId(id);
    if (time !== ms) {
      ms = time;
      at = toTimestamp(new Date(ms));
    }
    return at;
  };
}

/** The lines of a chunk whose decisions' places are known: the head, the time, then the entry's bytes. */
function copiedLines(chunk: DecisionLogChunk, spans: Uint32Array, head: string): Buffer {
  const { entries } = chunk;
  const bytes = Buffer.from(entries.buffer, entries.byteOffset, entries.length);
  const headBytes = Buffer.from(head, "utf8");
  // A line is at most the head, a time (29 characters), `",`, the entry and its bulk's head, `}` and `\n`.
  let size = 0;
  for (let i = 0; i < spans.length; i += 4)
    size +=
      headBytes.length +
      40 +
      (spans[i + 1] as number) -
      (spans[i] as number) +
      (spans[i + 3] as number) -
      (spans[i + 2] as number);
  const out = Buffer.allocUnsafe(size);
  const timeOf = idTimes();
  let pos = 0;
  for (let i = 0; i < spans.length; i += 4) {
    const start = spans[i] as number;
    const end = spans[i + 1] as number;
    const bulkStart = spans[i + 2] as number;
    const bulkEnd = spans[i + 3] as number;
    pos += headBytes.copy(out, pos);
    // The entry starts `{"id":"` (7 bytes), then its 36 characters.
    pos += out.write(timeOf(bytes.toString("latin1", start + 7, start + 43)), pos, "latin1");
    out[pos++] = 0x22; // "
    out[pos++] = 0x2c; // ,
    if (bulkEnd === 0) pos += bytes.copy(out, pos, start + 1, end);
    else {
      // The check's fields, then its bulk's query and revision.
      pos += bytes.copy(out, pos, start + 1, end - 1);
      out[pos++] = 0x2c;
      pos += bytes.copy(out, pos, bulkStart + 1, bulkEnd);
      out[pos++] = 0x7d; // }
    }
    out[pos++] = 0x0a;
  }
  return out.subarray(0, pos);
}

/** The lines of a chunk parsed from its text. */
function parsedLines(chunk: DecisionLogChunk, head: string): Buffer {
  const { entries: bytes } = chunk;
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("utf8");
  const timeOf = idTimes();
  let out = "";
  const line = (stored: StoredDecision, bulk?: StoredBulk) => {
    // Shipped entries may name their PDP and time (the line says each once).
    const { pdp_id: _pdp, timestamp, ...entry } = stored;
    const at = typeof timestamp === "string" ? timestamp : timeOf(stored.id);
    const fields = bulk ? { ...entry, query: bulk.query, revision: bulk.revision } : entry;
    // The entry's own fields after the head's, from its `{` on.
    out += `${head}${at}",${JSON.stringify(fields).slice(1)}\n`;
  };
  for (const stored of JSON.parse(text) as (StoredDecision | StoredBulk)[]) {
    if ("bulk" in stored) for (const check of stored.bulk) line(check, stored);
    else line(stored);
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
