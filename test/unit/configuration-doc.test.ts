import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { CONFIGURATION_FILE, generateConfigurationDoc } from "../../scripts/configuration-doc.ts";
import { SETTINGS } from "../../src/config.ts";

test("docs/configuration.md is what SETTINGS in src/config.ts generates (run `npm run docs:config` after changing a setting)", async () => {
  const generated = await generateConfigurationDoc();
  for (const s of SETTINGS)
    assert.ok(generated.includes(`\`${s.env}\``), `${s.env} is in the generated page`);
  assert.equal(fs.readFileSync(CONFIGURATION_FILE, "utf8"), generated);
});
