import { createEngine, type Engine } from "./engine/index.ts";
import type { EnvironmentData } from "./engine/types.ts";
import type { SnapshotHeader } from "./storage.ts";

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

/** Where a snapshot's pages go as they arrive: an engine's `loadPage`, or `collectPages` to keep them. */
export type PageSink = (page: EnvironmentData) => void;

/**
 * Reads a snapshot's NDJSON lines one at a time and hands each page (the policy, then facts of one kind) to `sink`
 * as it arrives; neither the text nor the pages are kept here. `finish` says whether the stream was whole.
 */
export class SnapshotAssembler {
  header: SnapshotHeader | undefined;
  private received = 0;
  private ended = false;

  constructor(private readonly sink: PageSink) {}

  /** The facts received so far. */
  get facts(): number {
    return this.received;
  }

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
      this.sink(value["policy"] as EnvironmentData);
      return;
    }
    if (value["end"]) {
      const end = value["end"] as { facts?: number };
      if (end.facts !== this.received)
        throw new SnapshotCutError(`the snapshot says ${end.facts} facts; ${this.received} arrived`);
      this.ended = true;
      return;
    }
    for (const kind of FACT_KINDS) {
      const page = value[kind];
      if (!Array.isArray(page)) continue;
      this.sink({ [kind]: page });
      this.received += page.length;
    }
  }

  /** The stream's header; throws SnapshotCutError when the stream did not reach its `end` line. */
  finish(): SnapshotHeader {
    if (!this.header || !this.ended) throw new SnapshotCutError("the snapshot stream was cut before its end");
    return this.header;
  }
}

/** A sink that keeps every page in `data`, as one `EnvironmentData` (tests and tools). */
export function collectPages(data: EnvironmentData): PageSink {
  return (page) => {
    for (const [kind, list] of Object.entries(page) as [keyof EnvironmentData, unknown[]][]) {
      const into = (data[kind] ??= []) as unknown[];
      for (const item of list) into.push(item);
    }
  };
}

/** Builds an engine from a snapshot's lines, page by page: the whole input is never in memory at once. */
export function engineAssembler(): { assembler: SnapshotAssembler; engine: Engine } {
  const engine = createEngine();
  return { assembler: new SnapshotAssembler((page) => engine.loadPage(page)), engine };
}
