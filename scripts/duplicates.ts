// Copy-paste check for `npm run check`: runs jscpd with .jscpd.json (TypeScript under src/) and fails when
// the duplicated lines exceed --max-lines. The limit only goes down; `npx jscpd --reporters consoleFull`
// shows the clones in full.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";

interface JscpdReport {
  statistics: { total: { duplicatedLines: number; clones: number; lines: number } };
  duplicates: { lines: number; firstFile: Place; secondFile: Place }[];
}
interface Place {
  name: string;
  start: number;
  end: number;
}

const { values } = parseArgs({ options: { "max-lines": { type: "string" } } });
const maxLines = Number(values["max-lines"]);
if (!Number.isInteger(maxLines) || maxLines < 0) {
  console.error("usage: node --import tsx scripts/duplicates.ts --max-lines N");
  process.exit(2);
}

const config = JSON.parse(readFileSync(".jscpd.json", "utf8")) as { output: string };
execFileSync(path.join("node_modules", ".bin", "jscpd"), [], { stdio: "inherit" });
const report = JSON.parse(readFileSync(path.join(config.output, "jscpd-report.json"), "utf8")) as JscpdReport;
const { duplicatedLines, clones } = report.statistics.total;

console.log(`jscpd: ${duplicatedLines} duplicated lines in ${clones} clones under src/ (limit ${maxLines})`);
if (duplicatedLines > maxLines) {
  const place = (p: Place) => `${p.name}:${p.start}-${p.end}`;
  for (const d of report.duplicates) console.log(`  ${place(d.firstFile)} ~ ${place(d.secondFile)}`);
  console.error(
    `jscpd: ${duplicatedLines - maxLines} duplicated lines above the limit; share the code instead`,
  );
  process.exit(1);
}
