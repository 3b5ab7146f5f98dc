// Diagnostic only (the "decision log off" rows of the PDP scenario): the embedded PDP exactly as `gatehouse serve`
// builds it with GATEHOUSE_DECISION_LOG=off, over the same SQLite database, without a control plane of its own
// (a second `gatehouse serve` on the file would run its own task runner and purges). The rows show what the
// decision log costs on the PDP's hot path.
import path from "node:path";
import { openStore } from "../../src/db/store.ts";
import { ChangeNotifier } from "../../src/changes/feed.ts";
import { createEmbeddedPdp } from "../../src/pdp/embedded.ts";
import { buildPdpApp } from "../../src/pdp/server.ts";
import { disabledDecisionLogger } from "../../src/pdp/decision-log.ts";

const [dataDir, port] = process.argv.slice(2);
if (!dataDir || !port) throw new Error("usage: pdp-nolog-server.ts DATA_DIR PORT");
const store = openStore({ sqliteFile: path.join(dataDir, "gatehouse.db") });
const pdp = createEmbeddedPdp({
  store,
  notifier: new ChangeNotifier(),
  publicUrl: "http://127.0.0.1",
  controlPlane: () => {
    throw new Error("the diagnostic PDP has no control plane");
  },
  decisions: disabledDecisionLogger,
});
const app = await buildPdpApp({ ...pdp, logger: { level: "warn" } });
await app.listen({ host: "127.0.0.1", port: Number(port) });
const stop = () =>
  void app
    .close()
    .then(() => pdp.close())
    .then(() => store.close())
    .then(() => process.exit(0));
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
