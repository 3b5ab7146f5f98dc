// The webhook sender's thread (webhooks.sender-thread.ts starts it): signs and sends each round's deliveries, so the
// HTTP client's work (requests, sockets, parsing, timers) stays off the server's event loop.
import { parentPort } from "node:worker_threads";
import { sendSigned } from "./webhooks.sender.ts";
import type { SenderReply, SenderRound } from "./webhooks.sender-thread.ts";

const port = parentPort;
if (!port) throw new Error("webhooks.sender.worker.ts runs as a worker thread");
port.on("message", async (message: SenderRound) => {
  const reply: SenderReply = {
    round: message.round,
    outcomes: await sendSigned(message.deliveries, message.options),
  };
  port.postMessage(reply);
});
