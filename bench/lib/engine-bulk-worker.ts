// Runs in its own process: loads the environment a PDP serves from the control plane's snapshot stream, then
// decides the bulk bodies' checks in process for the measured time. Prints one line "RESULT <json>": the engine's
// decisions per second on the same data and checks as `/allowed/bulk`, the yardstick of the bulk goal.
import { toCheckList } from "../../src/pdp/http/input.ts";
import { engineAssembler } from "../../src/pdp/snapshot-lines.ts";

interface Args {
  apiUrl: string;
  envKey: string;
  /** e.g. /v2/pdp-sync/default/production/snapshot */
  snapshotPath: string;
  bulk: { checks: unknown[]; pattern: string }[];
  seconds: number;
}

const args = JSON.parse(await readStdin()) as Args;

async function readStdin(): Promise<string> {
  let text = "";
  for await (const chunk of process.stdin) text += String(chunk);
  return text;
}

const res = await fetch(args.apiUrl + args.snapshotPath, {
  headers: { authorization: `Bearer ${args.envKey}` },
});
if (!res.ok) throw new Error(`snapshot: ${res.status} ${await res.text()}`);
const { assembler, engine } = engineAssembler();
for (const line of (await res.text()).split("\n")) assembler.line(line);
assembler.finish();

// The HTTP bodies become the engine's queries once, outside the measured loop.
const bodies = args.bulk.map((bulk) => ({ queries: toCheckList(bulk.checks), pattern: bulk.pattern }));
const decideAll = () => {
  for (const body of bodies) {
    let got = "";
    for (const query of body.queries) got += engine.check(query).allow ? "1" : "0";
    if (got !== body.pattern) throw new Error(`in process: got ${got}, expected ${body.pattern}`);
  }
};

const run = (seconds: number) => {
  const deadline = performance.now() + seconds * 1000;
  const start = performance.now();
  let decisions = 0;
  let end = start;
  do {
    decideAll();
    decisions += bodies.reduce((sum, body) => sum + body.queries.length, 0);
    end = performance.now();
  } while (end < deadline);
  return (decisions * 1000) / (end - start);
};
run(Math.min(1, args.seconds / 2)); // warm-up
process.stdout.write(`RESULT ${JSON.stringify({ decisions_per_s: run(args.seconds) })}\n`);
