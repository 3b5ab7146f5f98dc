import { ConfigError, configHelp, loadConfig } from "./config.ts";
import { migrateToLatest } from "./db/store.ts";
import { loadSecretBox, openConfiguredStore, startServer } from "./server.ts";
import { startStandalonePdp } from "./pdp/standalone.ts";
import { MEMBERS_USAGE, membersCommand } from "./members-cli.ts";
import { ORGS_USAGE, orgsCommand } from "./orgs-cli.ts";

const USAGE = `Usage: gatehouse [command] [flags]

Commands:
  serve     run the control plane API with the embedded PDP (default)
  pdp       run a standalone PDP for one environment:
            gatehouse pdp --control-plane URL --api-key ENVIRONMENT_KEY
  migrate   apply database migrations and exit
${MEMBERS_USAGE}
${ORGS_USAGE}
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
  if (command === "members") {
    return membersCommand(rest, openConfiguredStore, {
      env: process.env,
      stdin: process.stdin,
      print: (line) => console.log(line),
    });
  }
  if (command === "orgs") {
    return orgsCommand(rest, {
      openStore: openConfiguredStore,
      loadSecretBox,
      print: (line) => console.log(line),
    });
  }
  const config = loadConfig(flags);
  if (command === "migrate") {
    const store = openConfiguredStore(config);
    const applied = await migrateToLatest(store);
    await store.close();
    console.log(`migrations applied: ${applied.join(", ") || "none (up to date)"}`);
    return 0;
  }
  if (command === "pdp") {
    if (!config.controlPlaneUrl || !config.pdpApiKey) {
      throw new ConfigError("gatehouse pdp needs --control-plane URL and --api-key KEY");
    }
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
    });
    const stop = () =>
      pdp.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
    return -1;
  }
  if (command !== "serve") {
    process.stderr.write(`unknown command '${command}'\n\n${USAGE}`);
    return 2;
  }
  const server = await startServer(config);
  const stop = (signal: string) => {
    server.app.log.info({ signal }, "shutting down");
    server.close().then(
      () => process.exit(0),
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

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    if (
      err instanceof ConfigError ||
      (err instanceof TypeError && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS"))
    ) {
      process.stderr.write(`gatehouse: ${err.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`gatehouse: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
