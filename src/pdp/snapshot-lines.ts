import type { EnvironmentData } from "./engine/types.ts";
import type { Snapshot, SnapshotHeader } from "./storage.ts";

/** The kinds of fact a snapshot stream carries, a page per line. */
const FACT_KINDS = [
  "users",
  "tenants",
  "resource_instances",
  "role_assignments",
  "relationship_tuples",
] as const;

/** A snapshot stream that ended before its `end` line, or one that is not a snapshot: it must not be used. */
export class SnapshotCutError extends Error {}

/**
 * Builds the engine's input from a snapshot's NDJSON lines, one line at a time: each page of facts goes straight
 * into the arrays the engine is built from, and neither the text nor the pages are kept.
 */
export class SnapshotAssembler {
  header: SnapshotHeader | undefined;
  private readonly data: Required<
    Pick<
      EnvironmentData,
      "resources" | "roles" | "condition_sets" | "condition_set_rules" | (typeof FACT_KINDS)[number]
    >
  > = {
    resources: [],
    roles: [],
    condition_sets: [],
    condition_set_rules: [],
    users: [],
    tenants: [],
    resource_instances: [],
    role_assignments: [],
    relationship_tuples: [],
  };
  private facts = 0;
  private ended = false;

  line(text: string): void {
    if (text === "") return;
    let value: Record<string, unknown>;
    try {
      value = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new SnapshotCutError("a snapshot line is not JSON (cut short?)");
    }
    if (this.ended) throw new SnapshotCutError("a snapshot line after its end");
    if (!this.header) {
      if (value["format"] !== "gatehouse-snapshot/ndjson-1" || typeof value["revision"] !== "number")
        throw new SnapshotCutError("not a snapshot stream (no header line)");
      this.header = value as unknown as SnapshotHeader;
      return;
    }
    if (value["policy"]) {
      Object.assign(this.data, value["policy"]);
      return;
    }
    if (value["end"]) {
      const end = value["end"] as { facts?: number };
      if (end.facts !== this.facts)
        throw new SnapshotCutError(`the snapshot says ${end.facts} facts; ${this.facts} arrived`);
      this.ended = true;
      return;
    }
    for (const kind of FACT_KINDS) {
      const page = value[kind];
      if (!Array.isArray(page)) continue;
      const into = this.data[kind] as unknown[];
      for (const fact of page) into.push(fact);
      this.facts += page.length;
    }
  }

  /** The whole snapshot; throws SnapshotCutError when the stream did not reach its `end` line. */
  finish(): Snapshot & { header: SnapshotHeader } {
    if (!this.header || !this.ended) throw new SnapshotCutError("the snapshot stream was cut before its end");
    return { header: this.header, revision: this.header.revision, data: this.data };
  }
}
