import fs from "node:fs";
import path from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  /** µs on the monotonic clock, as `process.hrtime` reads it in any process on the machine (Linux). */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Where a server's event loop spent a load, from the samples of its `--cpu-prof` profile. */
export interface LoopShares {
  /** Samples of the loop at work (not idle) in the load's window. */
  busySamples: number;
  /** Milliseconds of the window. */
  windowMs: number;
  /** Share of the busy samples with a frame of `moduleSuffix` on their stack (what it calls included). */
  module: number;
  /** Share of the busy samples in the garbage collector. */
  gc: number;
}

/** Now on the monotonic clock, in µs: comparable with a profile's sample times (Linux). */
export const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

/**
 * Reads the main thread's `.cpuprofile` in `dir` and measures the samples taken between `fromUs` and `toUs`
 * (`monotonicUs()` of the process that ran the load): what share of the event loop's work ran under
 * `moduleSuffix` and in the garbage collector. Attributing within one process is free of the few percent by which
 * processes alike differ.
 */
/** The main thread's profile in `dir`, its nodes by id and each node's caller. */
function mainProfile(dir: string) {
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread, the others workers'.
  const file = fs.readdirSync(dir).find((name) => /\.0\.\d+\.cpuprofile$/.test(name));
  if (!file) throw new Error(`no main-thread .cpuprofile in ${dir}`);
  const profile = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  return { file, profile, byId, parent };
}

export function loopShares(dir: string, moduleSuffix: string, fromUs: number, toUs: number): LoopShares {
  const { file, profile, byId, parent } = mainProfile(dir);
  // Whether a node, or one of its callers, is in the module (memoized per node).
  const inModule = new Map<number, boolean>();
  const underModule = (id: number): boolean => {
    const known = inModule.get(id);
    if (known !== undefined) return known;
    const up = parent.get(id);
    const own = byId.get(id)?.callFrame.url.endsWith(moduleSuffix) ?? false;
    const result = own || (up !== undefined && underModule(up));
    inModule.set(id, result);
    return result;
  };
  let time = profile.startTime;
  let first: number | undefined;
  let last = 0;
  let busy = 0;
  let module = 0;
  let gc = 0;
  for (const [i, id] of profile.samples.entries()) {
    time += profile.timeDeltas[i] ?? 0;
    if (time < fromUs || time > toUs) continue;
    first ??= time;
    last = time;
    const name = byId.get(id)?.callFrame.functionName;
    if (name === "(idle)") continue;
    busy += 1;
    if (name === "(garbage collector)") gc += 1;
    else if (underModule(id)) module += 1;
  }
  if (first === undefined) throw new Error(`${file}: no samples between ${fromUs} and ${toUs} µs`);
  return {
    busySamples: busy,
    windowMs: (last - first) / 1000,
    module: busy === 0 ? 0 : module / busy,
    gc: busy === 0 ? 0 : gc / busy,
  };
}

/** One run of the event loop without a pause: consecutive samples of the main thread that are not idle. */
export interface Stretch {
  /** When it began (the last idle sample before it), µs on the monotonic clock. */
  startUs: number;
  /** From the last idle sample before it to its last sample: includes any time the thread waited for a CPU. */
  wallMs: number;
  /**
   * Its samples times the sampling interval: about the CPU time it used. A thread that waits for a CPU gets one
   * sample for the wait (the profiler's signals to it merge), so this leaves out most descheduled time.
   */
  cpuMs: number;
  /** The part of `cpuMs` in the garbage collector. */
  gcMs: number;
  /** The frames of this repository (src/) under which most of its samples ran, innermost first, with counts. */
  where: string[];
}

/**
 * The event loop's uninterrupted runs between `fromUs` and `toUs` (see `Stretch`), longest wall time first.
 * `intervalUs` is the profile's sampling interval (`--cpu-prof-interval`, 1,000 µs unless set).
 */
export function loopStretches(dir: string, fromUs: number, toUs: number, intervalUs = 1000): Stretch[] {
  const { profile, byId, parent } = mainProfile(dir);
  const srcFrame = new Map<number, string | undefined>();
  // The innermost frame of src/ on a node's stack, as `function file` (tsx's output has no useful line numbers).
  const inSrc = (id: number): string | undefined => {
    if (srcFrame.has(id)) return srcFrame.get(id);
    const frame = byId.get(id)?.callFrame;
    const match = /\/src\/(.+)$/.exec(frame?.url ?? "");
    const up = parent.get(id);
    const result = match
      ? `${frame?.functionName || "(anonymous)"} ${match[1]}`
      : up === undefined
        ? undefined
        : inSrc(up);
    srcFrame.set(id, result);
    return result;
  };
  // Outside src/ (the framework, the runtime): the sampled function and its package or module.
  const ownFrame = (id: number): string => {
    const frame = byId.get(id)?.callFrame;
    const where = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(frame?.url ?? "")?.[1] ?? frame?.url ?? "";
    return inSrc(id) ?? `${frame?.functionName || "(anonymous)"} ${where}`.trim();
  };
  const stretches: Stretch[] = [];
  let time = profile.startTime;
  let lastIdle = time;
  let open:
    { startUs: number; endUs: number; samples: number; gc: number; frames: Map<string, number> } | undefined;
  const close = () => {
    if (!open) return;
    const where = [...open.frames].sort((a, b) => b[1] - a[1]).slice(0, 3);
    stretches.push({
      startUs: open.startUs,
      wallMs: (open.endUs - open.startUs) / 1000,
      cpuMs: (open.samples * intervalUs) / 1000,
      gcMs: (open.gc * intervalUs) / 1000,
      where: where.map(([frame, count]) => `${frame} (${count})`),
    });
    open = undefined;
  };
  for (const [i, id] of profile.samples.entries()) {
    time += profile.timeDeltas[i] ?? 0;
    const name = byId.get(id)?.callFrame.functionName;
    if (name === "(idle)") {
      close();
      lastIdle = time;
      continue;
    }
    if (time < fromUs || time > toUs) continue;
    open ??= { startUs: lastIdle, endUs: time, samples: 0, gc: 0, frames: new Map() };
    open.endUs = time;
    open.samples += 1;
    if (name === "(garbage collector)") open.gc += 1;
    const frame = name === "(garbage collector)" ? name : ownFrame(id);
    open.frames.set(frame, (open.frames.get(frame) ?? 0) + 1);
  }
  close();
  return stretches.sort((a, b) => b.wallMs - a.wallMs);
}
