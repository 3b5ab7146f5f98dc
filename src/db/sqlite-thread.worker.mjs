// The thread behind sqlite-thread.ts: its own SQLite connection, each statement prepared once and answered the way
// Kysely's SQLite driver answers. Plain JavaScript because a worker does not inherit the TypeScript loader that
// bin/gatehouse.js registers.
import { parentPort, workerData } from "node:worker_threads";
import Sqlite from "better-sqlite3";

const { file, pragmas } = workerData;
const db = new Sqlite(file);
for (const pragma of pragmas) db.pragma(pragma);
const statements = new Map();

parentPort.on("message", (message) => {
  if (message === "close") {
    db.close();
    parentPort.close();
    return;
  }
  const { id, sql, parameters } = message;
  try {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = db.prepare(sql);
      // Statements come from a fixed set of queries; the bound keeps a stray one from growing the map for ever.
      if (statements.size < 500) statements.set(sql, statement);
    }
    if (statement.reader) {
      parentPort.postMessage({ id, rows: statement.all(parameters) });
    } else {
      const { changes, lastInsertRowid } = statement.run(parameters);
      parentPort.postMessage({
        id,
        rows: [],
        numAffectedRows: BigInt(changes),
        insertId: BigInt(lastInsertRowid),
      });
    }
  } catch (error) {
    parentPort.postMessage({
      id,
      error: error instanceof Error ? error.message : String(error),
      code: typeof error?.code === "string" ? error.code : undefined,
    });
  }
});
