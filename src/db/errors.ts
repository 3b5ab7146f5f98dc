/** Unique-constraint violations of either database, so services can answer 409 in one way. */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string } | null;
  return (
    e?.code === "23505" ||
    e?.code === "SQLITE_CONSTRAINT_UNIQUE" ||
    e?.code === "SQLITE_CONSTRAINT_PRIMARYKEY"
  );
}

/**
 * PostgreSQL's deadlock and serialization failure: the transaction collided with a concurrent one and was rolled
 * back whole, so the same request may succeed when sent again.
 */
export function isTransactionConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "40P01" || code === "40001";
}

/** PostgreSQL SQLSTATEs of a server that is away, shutting down, starting up or out of connections. */
const PG_UNAVAILABLE_CODES = new Set(["57P01", "57P02", "57P03", "53300"]);
/** Socket errors of a database host that cannot be reached. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ENOTFOUND",
]);
/** What pg says, without a code, of a connection that broke or could not be made in time. */
const PG_CONNECTION_MESSAGES = [
  "Connection terminated",
  "timeout exceeded when trying to connect",
  "is not queryable",
];

/**
 * Whether an error means the database cannot be reached for now (connection refused or broken, the pool's wait
 * timed out, the server shutting down or starting, SQLite's lock not released within the busy timeout), so the
 * same request may succeed later: 503, not 500. A bad query or a constraint violation is not.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const e = error as { code?: unknown; message?: unknown; errors?: unknown };
  const code = typeof e.code === "string" ? e.code : "";
  if (code.startsWith("08") && code.length === 5) return true; // connection exception class
  if (PG_UNAVAILABLE_CODES.has(code) || NETWORK_CODES.has(code)) return true;
  if (code === "SQLITE_BUSY" || code.startsWith("SQLITE_BUSY_")) return true;
  const message = typeof e.message === "string" ? e.message : "";
  if (code === "" && PG_CONNECTION_MESSAGES.some((m) => message.includes(m))) return true;
  // Node's connect to a name with several addresses fails with one error per address.
  return Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every(isDatabaseUnavailable);
}
