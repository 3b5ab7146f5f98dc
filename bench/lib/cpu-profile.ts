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
export function loopShares(dir: string, moduleSuffix: string, fromUs: number, toUs: number): LoopShares {
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread, the others workers'.
  const file = fs.readdirSync(dir).find((name) => /\.0\.\d+\.cpuprofile$/.test(name));
  if (!file) throw new Error(`no main-thread .cpuprofile in ${dir}`);
  const profile = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
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
