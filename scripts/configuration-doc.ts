import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as prettier from "prettier";
import { SETTINGS } from "../src/config.ts";

export const CONFIGURATION_FILE = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../docs/configuration.md",
);

const INTRO = `# Configuration

<!-- Generated from SETTINGS in src/config.ts by \`npm run docs:config\`; edit there, not here. -->

Every setting is an environment variable and a flag of the \`gatehouse\` command (\`npm start -- --api-port 9000\`
or \`bin/gatehouse.js serve --api-port 9000\`; installed as a package the command is \`gatehouse\`); a flag wins over
the variable. Settings are checked before anything starts: a bad value stops the command with one line naming it
(the bootstrap owner's e-mail and password by the members API's rules, so a first start that would fail creates
nothing). A \`GATEHOUSE_*\` variable that is not a setting gets a warning on stderr naming the nearest setting
(\`GATEHOUSE_APIPORT ... did you mean GATEHOUSE_API_PORT?\`). \`gatehouse help\` lists the same settings.
`;

const OUTRO = `With PostgreSQL:

\`\`\`sh
DATABASE_URL=postgres://postgres@127.0.0.1:5432/gatehouse npm start
\`\`\`

The commands besides \`serve\` (\`pdp\`, \`migrate\`, \`keys\`, \`members\`, \`orgs\`, \`demo\`) take the same settings; see
[operations](operations.md).
`;

/** docs/configuration.md as SETTINGS describes it, formatted as the repository's prettier formats it. */
export async function generateConfigurationDoc(): Promise<string> {
  const rows = SETTINGS.map((s) => {
    const shown = s.docDefault ?? (s.default === undefined ? "unset" : `\`${s.default}\``);
    return `| \`${s.env}\` | \`--${s.flag}\` | ${shown} | ${s.doc.replaceAll("|", "\\|")} |`;
  });
  const text = [
    INTRO,
    "| variable | flag | default | meaning |",
    "| --- | --- | --- | --- |",
    ...rows,
    "",
    OUTRO,
  ].join("\n");
  const options = (await prettier.resolveConfig(CONFIGURATION_FILE)) ?? {};
  return prettier.format(text, { ...options, filepath: CONFIGURATION_FILE });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  fs.writeFileSync(CONFIGURATION_FILE, await generateConfigurationDoc());
  console.log(`wrote ${path.relative(process.cwd(), CONFIGURATION_FILE)}`);
}
