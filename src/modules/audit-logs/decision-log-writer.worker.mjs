// The thread behind decision-log-writer.ts: its own SQLite connection, one transaction per batch. Plain JavaScript
// because a worker does not inherit the TypeScript loader that bin/gatehouse.js registers. Parsing the batch here
// and binding each row costs about half of unpacking it with SQLite's JSON functions.
import { parentPort, workerData } from "node:worker_threads";
import Sqlite from "better-sqlite3";

const { file, pragmas, columns, jsonFields } = workerData;
const db = new Sqlite(file);
for (const pragma of pragmas) db.pragma(pragma);
const environmentOf = db.prepare("select organization_id, project_id from environments where id = ?");
const insert = db.prepare(
  `insert into decision_logs (${columns.join(", ")}) values (${columns.map(() => "?").join(", ")})`,
);
// How each column's value is read from an entry, worked out once: the organization and project come from the
// entry's environment, JSON fields are stored as text, booleans as 0/1.
const json = new Set(jsonFields);
const readers = columns.map((column) => {
  if (column === "organization_id" || column === "project_id")
    return (_entry, environment) => environment[column];
  if (column === "created_at") return (_entry, _environment, createdAt) => createdAt;
  if (json.has(column)) return (entry) => (entry[column] == null ? null : JSON.stringify(entry[column]));
  return (entry) => {
    const v = entry[column];
    return v === undefined ? null : typeof v === "boolean" ? (v ? 1 : 0) : v;
  };
});
const row = (entry, environment, createdAt) => readers.map((read) => read(entry, environment, createdAt));

// Each environment is looked up once per batch, inside the batch's transaction: entries of an environment deleted
// since they were decided are left out.
const insertAll = db.transaction((entries, createdAt) => {
  const environments = new Map();
  let changes = 0;
  for (const entry of entries) {
    let environment = environments.get(entry.environment_id);
    if (environment === undefined) {
      environment = environmentOf.get(entry.environment_id) ?? null;
      environments.set(entry.environment_id, environment);
    }
    if (environment !== null) changes += insert.run(row(entry, environment, createdAt)).changes;
  }
  return changes;
});

parentPort.on("message", (message) => {
  if (message === "close") {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const changes = insertAll.immediate(JSON.parse(message.batch), message.createdAt);
    parentPort.postMessage({ id: message.id, changes });
  } catch (error) {
    parentPort.postMessage({ id: message.id, error: error instanceof Error ? error.message : String(error) });
  }
});
