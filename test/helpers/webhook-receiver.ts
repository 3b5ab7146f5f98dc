import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export interface Received {
  id: string;
  type: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  payload: any;
}

/**
 * A real HTTP webhook receiver on loopback that checks every delivery with the Standard Webhooks library. `mode`
 * says how it answers: `ok` (204), `fail` (500), `hang` (never; `held` has the deliveries' ids). `stop` and `start`
 * take it off the network and back on the same port (an outage).
 */
export async function startReceiver(port = 0) {
  let secret: string | undefined;
  const received: Received[] = [];
  const rejected: string[] = [];
  const held: string[] = [];
  let mode: "ok" | "fail" | "hang" = "ok";
  const handler: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (mode === "hang") {
        held.push(String(req.headers["webhook-id"]));
        return;
      }
      if (mode === "fail") {
        res.writeHead(500).end("receiver is failing on purpose");
        return;
      }
      const body = Buffer.concat(chunks).toString("utf8");
      try {
        if (secret === undefined) throw new Error("no secret yet");
        const payload = new Webhook(secret).verify(body, req.headers as Record<string, string>);
        received.push({ id: String(req.headers["webhook-id"]), type: (payload as Received).type, payload });
        res.writeHead(204).end();
      } catch (e) {
        rejected.push(String(e));
        res.writeHead(400).end("bad signature");
      }
    });
  };
  let server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/hook`,
    port: bound,
    received,
    rejected,
    held,
    setSecret(s: string) {
      secret = s;
    },
    setMode(m: typeof mode) {
      mode = m;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
    async start() {
      server = http.createServer(handler);
      await new Promise<void>((r) => server.listen(bound, "127.0.0.1", r));
    },
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** Waits until `check` holds, polling; fails with `what` after `ms`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  ms = 20_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
