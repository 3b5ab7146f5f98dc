/** `npm run fuzz`: the in-suite fuzz test, longer. FUZZ_SEED (default: random, printed) and FUZZ_COUNT (20000). */
import { isDeepStrictEqual } from "node:util";
import { runFuzz, startFuzzTarget } from "./fuzz.ts";

const seed = Number(process.env["FUZZ_SEED"] ?? Math.floor(Math.random() * 2 ** 31));
const count = Number(process.env["FUZZ_COUNT"] ?? 20_000);
console.log(`fuzzing with FUZZ_SEED=${seed} FUZZ_COUNT=${count}`);
const target = await startFuzzTarget();
const before = await target.control();
const result = await runFuzz(target, seed, count);
const unchanged = isDeepStrictEqual(await target.control(), before);
await target.close();
console.log(`sent ${result.sent}; statuses ${JSON.stringify(result.statuses)}`);
for (const f of result.failures.slice(0, 20))
  console.log(`#${f.index} ${f.status} ${f.request}\n  ${f.body}`);
if (!unchanged) console.log("the other organization's control objects changed");
process.exitCode = result.failures.length === 0 && unchanged ? 0 : 1;
