import fs from "node:fs";
import readline from "node:readline";
import {
  ConfigError,
  loadConfig,
  MAX_RATE_LIMIT_PER_MINUTE,
  MIN_RATE_LIMIT_PER_MINUTE,
  type Config,
} from "../config.ts";
import { setOrganizationRateLimit } from "../domain/organization-records.ts";
import { migrateToLatest, type Store } from "../db/store.ts";
import type { SecretBox } from "../lib/secrets.ts";
import { takeFlags } from "./args.ts";
import { ORGS_USAGE } from "./usage.ts";
import {
  deleteOrganization,
  findOrganization,
  recordExport,
  setFrozen,
  TransferError,
  writeExport,
} from "../domain/organization-transfer.ts";
import { importOrganization } from "../domain/organization-import.ts";

export interface OrgsCommandDeps {
  openStore: (config: Config) => Store;
  loadSecretBox: (config: Config) => SecretBox;
  print: (line: string) => void;
}

/**
 * `gatehouse orgs ...`: its own flags (--org, --file, --confirm, --limit, --freeze, --force), then the service's
 * flags for the database.
 */
export async function orgsCommand(argv: string[], deps: OrgsCommandDeps, env = process.env): Promise<number> {
  const [sub, ...rest] = argv;
  const { values, rest: configFlags } = takeFlags(
    rest,
    ["org", "file", "confirm", "limit", "freeze", "force", "to"],
    ["freeze", "force"],
  );
  const { org, file } = values;
  const usage = new ConfigError(`usage:\n${ORGS_USAGE}`);
  if (!file && (sub === "export" || sub === "import")) throw usage;
  if (!org && sub !== "import") throw usage;
  const limit = sub === "set-rate-limit" ? rateLimitOf(values.limit) : undefined;
  const config = loadConfig(configFlags, env);
  const store = deps.openStore(config);
  try {
    await migrateToLatest(store);
    if (sub === "import") {
      // The iterator is taken at once: lines read before the import's transaction begins are buffered, not lost.
      const input = readline.createInterface({
        input: fs.createReadStream(file as string),
        crlfDelay: Infinity,
      });
      const reading = input[Symbol.asyncIterator]();
      const lines = { [Symbol.asyncIterator]: () => reading };
      const result = await importOrganization(store.db, deps.loadSecretBox(config), lines, {
        region: config.region,
        maxValueBytes: config.bodyLimitBytes,
      });
      const rows = Object.values(result.counts).reduce((n, c) => n + c, 0);
      deps.print(
        `Imported organization ${result.organizationId} into region ${config.region}: ${rows} rows.`,
      );
      deps.print(
        "Its API keys are reissued; the new secrets (shown once, hand them to those who used the old keys):",
      );
      for (const key of result.keys) deps.print(`  ${key.secret}  ${key.name ?? "(no name)"}, ${key.scope}`);
      return 0;
    }
    const organization = await findOrganization(store.db, org as string);
    if (!organization) throw new ConfigError(`no organization '${org}' in this database`);
    if (sub === "export") {
      const to = destinationOf(values.to, config);
      if (values.freeze === "true" && !organization.frozen_at) {
        await setFrozen(store.db, organization.id, true);
        deps.print(frozenLine(organization.key));
      }
      const out = fs.createWriteStream(file as string, { flags: "wx", mode: 0o600 });
      const failed = new Promise<never>((_, reject) => out.once("error", reject));
      failed.catch(() => {});
      const write = async (line: string) => {
        if (!out.write(`${line}\n`))
          await Promise.race([new Promise<void>((r) => out.once("drain", () => r())), failed]);
      };
      const { rows, digest } = await writeExport(store.db, organization, { from: config.region, to }, write);
      await Promise.race([
        new Promise<void>((resolve, reject) =>
          out.end((error?: Error | null) => (error ? reject(error) : resolve())),
        ),
        failed,
      ]);
      // Only a whole file counts as the export a later delete compares with.
      await recordExport(store.db, organization.id, digest);
      deps.print(
        `Exported organization '${organization.key}' (${rows} rows) to ${file}, for region '${to}' (gatehouse orgs import there).`,
      );
      if (!organization.frozen_at && values.freeze !== "true")
        deps.print(
          "It is not frozen: writes made from now on are not in the file (gatehouse orgs freeze, or export --freeze).",
        );
      return 0;
    }
    if (sub === "freeze" || sub === "unfreeze") {
      await setFrozen(store.db, organization.id, sub === "freeze");
      deps.print(
        sub === "freeze"
          ? frozenLine(organization.key)
          : `Organization '${organization.key}' takes writes again.`,
      );
      return 0;
    }
    if (sub === "set-rate-limit") {
      await setOrganizationRateLimit(store.db, organization.id, limit);
      deps.print(
        limit === undefined
          ? `Organization '${organization.key}' has no rate limit of its own now: its keys get the server's (GATEHOUSE_RATE_LIMIT_PER_MINUTE).`
          : `Organization '${organization.key}': ${limit} requests per minute per API key.`,
      );
      deps.print("Running servers apply it within 5 seconds.");
      return 0;
    }
    if (sub === "delete") {
      if (values.confirm !== organization.key)
        throw new ConfigError(
          `to delete organization '${organization.key}', add --confirm ${organization.key}`,
        );
      const counts = await deleteOrganization(store.db, organization, { force: values.force === "true" });
      const rows = Object.values(counts).reduce((n, c) => n + c, 0);
      deps.print(`Deleted organization '${organization.key}' from this region (${rows} rows).`);
      return 0;
    }
    throw usage;
  } catch (e) {
    if (e instanceof TransferError || (e instanceof Error && "code" in e && e.code === "EEXIST"))
      throw new ConfigError(e.message);
    throw e;
  } finally {
    await store.close();
  }
}

/** --to: the region the export is for; one of GATEHOUSE_REGIONS when it lists them. */
function destinationOf(to: string | undefined, config: Config): string {
  if (to === undefined)
    throw new ConfigError(
      `orgs export needs --to REGION: the region the organization moves to (this one is '${config.region}')`,
    );
  const known = Object.keys(config.regionUrls);
  if (!/^[a-z][a-z0-9-]{0,31}$/.test(to) || (known.length > 1 && !known.includes(to)))
    throw new ConfigError(
      `--to must name a region${known.length > 1 ? ` of GATEHOUSE_REGIONS (${known.join(", ")})` : " (a short lower-case name)"}, got "${to.slice(0, 64)}"`,
    );
  return to;
}

const frozenLine = (key: string) =>
  `Organization '${key}' is frozen: its writes answer 423 until \`gatehouse orgs unfreeze --org ${key}\`; reads go on.`;

/** --limit: requests per minute in the range the API accepts, or "default" to remove the organization's own. */
function rateLimitOf(value: string | undefined): number | undefined {
  if (value === "default") return undefined;
  const limit = Number(value);
  if (
    value === undefined ||
    !/^\d+$/.test(value) ||
    limit < MIN_RATE_LIMIT_PER_MINUTE ||
    limit > MAX_RATE_LIMIT_PER_MINUTE
  ) {
    throw new ConfigError(
      `--limit must be a whole number of requests per minute from ${MIN_RATE_LIMIT_PER_MINUTE} to ${MAX_RATE_LIMIT_PER_MINUTE}, or "default" (the server's), got ${value === undefined ? "nothing" : `"${value}"`}`,
    );
  }
  return limit;
}
