import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { once } from "node:events";
import type { FeedEntry } from "../../../changes/feed.ts";
import type { Engine } from "../../engine/index.ts";
import { engineAssembler, SnapshotCutError } from "../../snapshot-lines.ts";
import type { Snapshot, SnapshotHeader } from "../../storage.ts";
import { ControlPlaneError } from "./control-plane.ts";
import { legacyFile, readLegacyState } from "./legacy-disk-state.ts";
import { countChanges, type EnvironmentIds, type SyncState } from "./sync-state.ts";

/** The copy on disk as read back: the environment, its snapshot and the changes since. */
export interface StoredState extends EnvironmentIds {
  base: Snapshot;
  changes: FeedEntry[];
}

/** A snapshot's lines, each given to `onLine` as they arrive (the control plane's stream). */
type LineStream = (onLine: (line: string) => Promise<void>) => Promise<void>;

/**
 * The PDP's copy on disk: the snapshot it loaded (`pdp-snapshot.ndjson`, the control plane's stream as it arrived)
 * and the changes since, appended to `pdp-journal.jsonl` as they come, a line each. A snapshot is written to a
 * temporary file while it streams in and takes the old one's place only once whole, so a cut stream leaves the old
 * copy as it was. Persisting costs the new changes, not the whole environment. A line a crash cut short ends the
 * journal; lines of an older snapshot's journal (a crash between the two writes) are at or below the new
 * snapshot's revision, which loading skips. Copies of older versions (`legacy-disk-state.ts`) are still read, and
 * replaced by the next snapshot.
 */
export class DiskState {
  private readonly file: string;
  private readonly legacyFile: string;
  private readonly journal: string;
  /** Counts the snapshots received whole: a renewal that one overtook is dropped. */
  private received = 0;

  constructor(dataDir: string) {
    this.file = path.join(dataDir, "pdp-snapshot.ndjson");
    this.legacyFile = legacyFile(dataDir);
    this.journal = path.join(dataDir, "pdp-journal.jsonl");
    fs.mkdirSync(dataDir, { recursive: true });
  }

  /**
   * Receives a snapshot's lines from `stream`: each page goes into a new engine and to the temporary file as it
   * arrives. Once the stream ends whole, the file becomes the copy and the journal starts over.
   */
  async receive(stream: LineStream): Promise<{ revision: number; engine: Engine }> {
    const tmp = `${this.file}.tmp`;
    const out = fs.createWriteStream(tmp);
    const { assembler, engine } = engineAssembler();
    let failed: Error | undefined;
    out.on("error", (error) => (failed = error));
    try {
      await stream(async (line) => {
        if (failed) throw failed;
        assembler.line(line);
        if (!out.write(`${line}\n`)) await once(out, "drain");
      });
      const { revision } = assembler.finish();
      await endStream(out);
      fs.renameSync(tmp, this.file);
      fs.rmSync(this.legacyFile, { force: true });
      fs.writeFileSync(this.journal, "");
      this.received++;
      return { revision, engine };
    } catch (error) {
      out.destroy();
      fs.rmSync(tmp, { force: true });
      throw error instanceof SnapshotCutError || error instanceof ControlPlaneError
        ? error
        : new SnapshotCutError(`the snapshot stream was cut: ${String(error)}`);
    }
  }

  async read(): Promise<StoredState | undefined> {
    const stored = fs.existsSync(this.file) ? await this.readSnapshot() : readLegacyState(this.legacyFile);
    if (!stored) return undefined;
    // Older versions kept the changes in the snapshot's file.
    return { ...stored, changes: [...stored.changes, ...this.readJournal()] };
  }

  /** The journal's entries; a line a crash cut short ends it, and the file is cut there too. */
  private readJournal(): FeedEntry[] {
    const lines = fs.existsSync(this.journal) ? fs.readFileSync(this.journal, "utf8").split("\n") : [];
    const entries: FeedEntry[] = [];
    const kept: string[] = [];
    for (const line of lines) {
      if (line === "") continue;
      try {
        entries.push(JSON.parse(line) as FeedEntry);
        kept.push(line);
      } catch {
        // Cut short by a crash: the journal ends before it, and goes on from there.
        fs.writeFileSync(this.journal, kept.map((l) => `${l}\n`).join(""));
        break;
      }
    }
    return entries;
  }

  private async readSnapshot(): Promise<StoredState | undefined> {
    const { assembler, engine } = engineAssembler();
    try {
      const lines = readline.createInterface({ input: fs.createReadStream(this.file), crlfDelay: Infinity });
      for await (const line of lines) assembler.line(line);
      const header = assembler.finish();
      return {
        organization_id: header.organization_id,
        project_id: header.project_id,
        environment_id: header.environment_id,
        base: { revision: header.revision, engine },
        changes: [],
      };
    } catch {
      return undefined;
    }
  }

  /** Appends the changes not yet on disk to the journal, and lets them go from memory. */
  persist(sync: SyncState): void {
    if (!sync.dirty || !sync.ids) return;
    const fresh = sync.pending;
    if (fresh.length > 0)
      fs.appendFileSync(this.journal, fresh.map((c) => `${JSON.stringify(c)}\n`).join(""));
    sync.pending = [];
    sync.journaled += countChanges(fresh);
    sync.dirty = false;
  }

  /**
   * Replaces the copy with a fresh snapshot from `stream`, written to disk only (the engine already holds all of
   * it, change by change): nothing is parsed but the header and the end line, and a stream without its end line
   * leaves the old copy. The journal then keeps only the changes after the new snapshot's revision. A crash
   * between the rename and the journal's rewrite leaves lines at or below that revision, which loading skips.
   */
  async compact(stream: LineStream, sync: SyncState): Promise<number> {
    const tmp = `${this.file}.renew.tmp`;
    const revision = await this.writeUnparsed(stream, tmp);
    fs.renameSync(tmp, this.file);
    fs.rmSync(this.legacyFile, { force: true });
    this.persist(sync);
    this.trimJournal(revision, sync);
    return revision;
  }

  /**
   * Writes a snapshot stream to `tmp` as it arrives, parsing only its header; answers its revision once it ended
   * whole, and removes `tmp` when it did not (or a whole snapshot received meanwhile took the copy's place).
   */
  private async writeUnparsed(stream: LineStream, tmp: string): Promise<number> {
    const received = this.received;
    const out = fs.createWriteStream(tmp);
    let header: SnapshotHeader | undefined;
    let last = "";
    let failed: Error | undefined;
    out.on("error", (error) => (failed = error));
    try {
      await stream(async (line) => {
        if (failed) throw failed;
        if (line === "") return;
        if (!header) header = JSON.parse(line) as SnapshotHeader;
        last = line;
        if (!out.write(`${line}\n`)) await once(out, "drain");
      });
      if (header?.format !== "gatehouse-snapshot/ndjson-1" || !last.startsWith('{"end":'))
        throw new SnapshotCutError("the snapshot stream was cut before its end");
      await endStream(out);
      // A whole snapshot loaded meanwhile replaced the copy and its journal: this one must not go over it.
      if (this.received !== received)
        throw new SnapshotCutError("a newer snapshot replaced the copy meanwhile");
      return header.revision;
    } catch (error) {
      out.destroy();
      fs.rmSync(tmp, { force: true });
      throw error;
    }
  }

  /** Rewrites the journal with the changes after `revision` only (the snapshot on disk holds the rest). */
  private trimJournal(revision: number, sync: SyncState): void {
    const kept = fs
      .readFileSync(this.journal, "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => ({ line, entry: JSON.parse(line) as FeedEntry }))
      .filter(({ entry }) => entry.revision > revision);
    fs.writeFileSync(`${this.journal}.tmp`, kept.map(({ line }) => `${line}\n`).join(""));
    fs.renameSync(`${this.journal}.tmp`, this.journal);
    sync.journaled = countChanges(kept.map(({ entry }) => entry));
  }
}

/** Ends a file stream, once everything written to it is flushed. */
const endStream = (out: fs.WriteStream) =>
  new Promise<void>((resolve, reject) =>
    out.end((error?: Error | null) => (error ? reject(error) : resolve())),
  );
