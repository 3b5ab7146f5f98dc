import { ConfigError, configHelp, loadConfig, unknownVariableWarnings, type Config } from "./config.ts";
import type { migrateToLatest, Store } from "./db/store.ts";
import { takeFlags, UsageError } from "./cli/args.ts";
import { StartError } from "./lib/start-error.ts";
import { MEMBERS_USAGE, ORGS_USAGE, POLICY_USAGE } from "./cli/usage.ts";

// Each command imports what it runs when it runs: `gatehouse help` or `demo` loads no server.

const USAGE = `Usage: gatehouse [command] [flags]

Commands:
  serve     run the control plane API with the embedded PDP (default)
  pdp       run a standalone PDP for one environment:
            gatehouse pdp --control-plane URL --api-key ENVIRONMENT_KEY
  migrate   apply database migrations and exit
${MEMBERS_USAGE}
${ORGS_USAGE}
  keys create --org ORG --scope org|project|environment [--project P] [--env E]
              [--access admin|write|read] [--name NAME]
            make an API key on the database directly (no key needed) and print its secret once
  keys list [--org ORG]
            list the API keys (never their secrets)
${POLICY_USAGE}
  demo      [--api-key ORG_ADMIN_KEY] [--url URL]
            create the example project "demo" through the running server's API; prints its environment
            key on standard output and the checks to try on standard error
  help      show this text

Flags (each also an environment variable):
${configHelp()}
`;

async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  const command = first === undefined || first.startsWith("--") ? "serve" : first;
  const flags = command === first ? rest : argv;
  if (command === "help" || flags.includes("--help")) {
    process.stdout.write(USAGE);
    return 0;
  }
  for (const line of unknownVariableWarnings(process.env))
    process.stderr.write(`gatehouse: warning: ${line}\n`);
  if (command === "keys") {
    const [action, ...keyArgs] = flags;
    if (action !== "create" && action !== "list") throw new UsageError("gatehouse keys needs create or list");
    const { KEY_FLAGS, createKey, listKeys } = await import("./cli/keys.ts");
    const { loadSecretBox } = await import("./server.ts");
    const { values, rest } = takeFlags(keyArgs, KEY_FLAGS);
    const config = loadConfig(rest);
    return withStore(config, async (store) => {
      if (action === "create") await createKey(store.db, loadSecretBox(config), values, console.log);
      else await listKeys(store.db, values, console.log);
      return 0;
    });
  }
  if (command === "members") {
    const { membersCommand } = await import("./cli/members.ts");
    const { openConfiguredStore } = await import("./server.ts");
    return membersCommand(flags, openConfiguredStore, {
      env: process.env,
      stdin: process.stdin,
      print: (line) => console.log(line),
    });
  }
  if (command === "orgs") {
    const { orgsCommand } = await import("./cli/orgs.ts");
    const { loadSecretBox, openConfiguredStore } = await import("./server.ts");
    return orgsCommand(flags, {
      openStore: openConfiguredStore,
      loadSecretBox,
      print: (line) => console.log(line),
    });
  }
  if (command === "policy") {
    const { policyCommand } = await import("./cli/policy.ts");
    return policyCommand(flags, {
      env: process.env,
      out: (text) => process.stdout.write(text),
      err: (text) => process.stderr.write(text),
    });
  }
  if (command === "demo") {
    const { DEMO_FLAGS, runDemo } = await import("./cli/demo.ts");
    const { values, rest } = takeFlags(flags, DEMO_FLAGS);
    return runDemo(loadConfig(rest), values);
  }
  const config = loadConfig(flags);
  if (command === "migrate") {
    return withStore(config, async (store, migrateToLatest) => {
      const applied = await migrateToLatest(store);
      console.log(`migrations applied: ${applied.join(", ") || "none (up to date)"}`);
      return 0;
    });
  }
  if (command === "pdp") {
    if (!config.controlPlaneUrl || !config.pdpApiKey) {
      throw new ConfigError("gatehouse pdp needs --control-plane URL and --api-key KEY");
    }
    const { startTracing, stopTracing } = await import("./lib/tracing.ts");
    await startTracing();
    const { startStandalonePdp } = await import("./pdp/standalone.ts");
    const pdp = await startStandalonePdp({
      controlPlaneUrl: config.controlPlaneUrl,
      apiKey: config.pdpApiKey,
      host: config.host,
      pdpPort: config.pdpPort,
      opaPort: config.opaPort,
      dataDir: config.dataDir,
      logLevel: config.logLevel,
      decisionLog: config.decisionLog !== "off",
      decisionLogSpoolBytes: config.decisionLogSpoolBytes,
      listingHistory: config.pdpListingHistory,
    });
    const stop = () =>
      pdp.close().then(
        () => stopTracing().finally(() => process.exit(0)),
        () => process.exit(1),
      );
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
    return -1;
  }
  if (command !== "serve") throw new UsageError(`unknown command '${command}'`);
  const { startTracing, stopTracing } = await import("./lib/tracing.ts");
  // Before the store and the servers: they take their spans' hooks when built.
  await startTracing();
  const { startServer } = await import("./server.ts");
  const server = await startServer(config);
  const stop = (signal: string) => {
    server.app.log.info({ signal }, "shutting down");
    server.close().then(
      () => stopTracing().finally(() => process.exit(0)),
      (err: unknown) => {
        server.app.log.error({ err }, "error during shutdown");
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  return -1;
}

/** A command on the migrated database, closed afterwards. */
async function withStore(
  config: Config,
  run: (store: Store, migrate: typeof migrateToLatest) => Promise<number>,
): Promise<number> {
  const { openReachableStore } = await import("./server.ts");
  const { migrateToLatest } = await import("./db/store.ts");
  const store = await openReachableStore(config);
  try {
    await migrateToLatest(store);
    return await run(store, migrateToLatest);
  } finally {
    await store.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    if (
      err instanceof UsageError ||
      (err instanceof TypeError && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS"))
    ) {
      process.stderr.write(`gatehouse: ${firstLine(err.message)}; see \`gatehouse help\`\n`);
      process.exit(2);
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`gatehouse: ${err.message}\n`);
      process.exit(2);
    }
    if (err instanceof StartError) {
      process.stderr.write(`gatehouse: ${err.message}\n`);
      process.exit(1);
    }
    process.stderr.write(`gatehouse: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);

/** Node's parseArgs explains itself over several lines; the first says what was wrong. */
function firstLine(text: string): string {
  return text.split("\n")[0]?.replace(/\.$/, "") ?? text;
}
