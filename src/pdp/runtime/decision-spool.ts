import { openSpool, type Spool, type SpoolOptions, type SpoolStats } from "../../lib/spool.ts";
import type { DecisionLogChunk } from "../storage.ts";

export type DecisionSpoolStats = SpoolStats;

export interface DecisionSpool extends Omit<Spool, "accept"> {
  /** The decision logger's sink: ships the chunk, or keeps it on disk when the control plane cannot take it. */
  accept(chunk: DecisionLogChunk): Promise<void>;
}

export interface DecisionSpoolOptions extends Omit<SpoolOptions, "name" | "sink" | "ship"> {
  /**
   * Sends one chunk's entries (a JSON array as UTF-8) to the control plane, with the PDP that made them (undefined
   * for files of older versions, whose entries name it).
   */
  ship(entries: Uint8Array<ArrayBuffer>, pdpId: string | undefined): Promise<void>;
}

/**
 * The standalone PDP's decision log while the control plane is away: chunks it could not ship wait on disk (the
 * spool of src/lib/spool.ts, one file per chunk, tagged with the PDP that made it) and are shipped oldest first when
 * it answers again, so the control plane receives the entries in the order they were made. The control plane stores
 * a chunk shipped twice (a crash between its answer and the file's deletion) once.
 */
export function openDecisionSpool(options: DecisionSpoolOptions): DecisionSpool {
  const spool = openSpool({ ...options, name: "decision log", sink: "the control plane" });
  return {
    ...spool,
    accept: (chunk) => spool.accept({ bytes: chunk.entries, count: chunk.count, tag: chunk.pdpId }),
  };
}
