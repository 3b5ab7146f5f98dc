import net from "node:net";
import { freePort } from "./process.ts";
import { PG_URL } from "./stores.ts";

/** A TCP relay to `host:port` that the test can cut (connections dropped, new ones refused) and mend. */
export async function tcpRelay(host: string, targetPort: number) {
  const port = await freePort();
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = net.createServer((client) => {
        const upstream = net.connect(targetPort, host);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on("close", () => sockets.delete(s));
          s.on("error", () => s.destroy());
        }
        client.pipe(upstream).pipe(client);
      });
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
  await listen();
  return {
    port,
    async cut() {
      const closed = new Promise((resolve) => server?.close(resolve));
      for (const s of sockets) s.destroy();
      await closed;
    },
    mend: listen,
    close() {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => (server?.listening ? server.close(() => resolve()) : resolve()));
    },
  };
}

/** A relay to the shared PostgreSQL (tcpRelay), with the URL that reaches it through the relay. */
export async function pgRelay() {
  const target = new URL(PG_URL);
  const relay = await tcpRelay(target.hostname, Number(target.port || 5432));
  const url = new URL(PG_URL);
  url.host = `127.0.0.1:${relay.port}`;
  return { ...relay, url: url.toString() };
}
