// The thread behind decision-log-writer.ts: its own SQLite connection, one insert per chunk, the chunk's entries
// stored as the text they came in. Plain JavaScript because a worker does not inherit the TypeScript loader that
// bin/gatehouse.js registers.
import { parentPort, workerData } from "node:worker_threads";
import Sqlite from "better-sqlite3";

const { file, pragmas, insertSql } = workerData;
const db = new Sqlite(file);
for (const pragma of pragmas) db.pragma(pragma);
const insert = db.prepare(insertSql);

parentPort.on("message", (message) => {
  if (message === "close") {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const { changes } = insert.run(message.parameters);
    parentPort.postMessage({ id: message.id, changes });
  } catch (error) {
    parentPort.postMessage({ id: message.id, error: error instanceof Error ? error.message : String(error) });
  }
});
