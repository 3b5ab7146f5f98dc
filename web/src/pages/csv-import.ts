// CSV import of users and role assignments: the file is parsed in chunks (papaparse, paused while a chunk is
// sent), each row is checked with the API's rules, and the good ones go to the bulk routes in batches of BATCH,
// one request at a time (small batches keep a refused batch's split short and the progress even; the server keeps
// its event loop free at any batch size: docs/perf/event-loop.md).
// A batch the API refuses (all or nothing) is split in halves until the rows it refuses are found, each reported
// with the API's reason.
import Papa from "papaparse";
import { ApiError } from "../api/client";
import { validationSentence } from "../components/sentences";

export const BATCH = 100;
const KEY = /^[A-Za-z0-9|@+\-._]+$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The columns a file may have; `key` is the only one required. */
export const COLUMNS = [
  "key",
  "email",
  "first_name",
  "last_name",
  "role",
  "tenant",
  "resource_instance",
  "expires_at",
] as const;
type Row = Partial<Record<(typeof COLUMNS)[number], string>>;

export interface UserOp {
  key: string;
  email?: string;
  first_name?: string;
  last_name?: string;
}
export interface AssignOp {
  user: string;
  role: string;
  tenant?: string;
  resource_instance?: string;
  expires_at?: string;
}

/** A refused row: its line in the file (the header is line 1), the user key and why. */
export interface RowError {
  line: number;
  key: string;
  problem: string;
}

export interface Progress {
  /** bytes of the file read so far, and in all */
  read: number;
  size: number;
  rows: number;
  users: number;
  assignments: number;
  errors: RowError[];
  done: boolean;
  /** set while the import waits for the rate limit's window to end */
  waiting?: boolean;
}

/** The two bulk calls, so the import can be driven by the page's typed client. */
export interface BulkSender {
  users(ops: UserOp[]): Promise<void>;
  assign(ops: AssignOp[]): Promise<void>;
}

const text = (value: string | undefined) => (value ?? "").trim();

/** The row's user and assignment, or the sentence saying why it cannot be sent. */
export function checkRow(
  row: Row,
  tenantRoles: Set<string>,
  now = Date.now(),
): { user: UserOp; assign?: AssignOp } | string {
  const key = text(row.key);
  if (!key) return "The key is empty.";
  if (key.length > 255 || !KEY.test(key))
    return `The key “${key.slice(0, 40)}” may hold only letters, digits and | @ + - . _ (at most 255).`;
  const email = text(row.email);
  if (email && !EMAIL.test(email)) return `The e-mail “${email}” is not an e-mail address.`;
  const user: UserOp = {
    key,
    ...(email && { email }),
    ...(text(row.first_name) && { first_name: text(row.first_name) }),
    ...(text(row.last_name) && { last_name: text(row.last_name) }),
  };
  const role = text(row.role);
  const tenant = text(row.tenant);
  const instance = text(row.resource_instance);
  const expires = text(row.expires_at);
  if (!role) return tenant || instance || expires ? "A tenant, instance or expiry needs a role." : { user };
  if (!instance && !tenantRoles.has(role)) return `There is no tenant role “${role}”.`;
  if (!instance && !tenant) return "A tenant role needs a tenant.";
  if (expires) {
    const at = Date.parse(expires);
    if (!/(Z|[+-]\d\d:?\d\d)$/i.test(expires) || Number.isNaN(at))
      return `The expiry “${expires}” is not a date-time with an offset (2030-01-31T12:00:00Z).`;
    if (at <= now) return `The expiry ${expires} is not in the future.`;
  }
  return {
    user,
    assign: {
      user: key,
      role,
      ...(tenant && { tenant }),
      ...(instance && { resource_instance: instance }),
      ...(expires && { expires_at: expires }),
    },
  };
}

/** Why the API refused one item, as a sentence. */
function reasonOf(error: unknown): string {
  if (error instanceof ApiError) return validationSentence(error.message);
  return error instanceof Error ? error.message : String(error);
}

/** Whether a refusal is about the items sent (split and retry) rather than the server or the session. */
const refusesItems = (error: unknown) =>
  error instanceof ApiError && [400, 404, 409, 422].includes(error.status);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends once; a 429 (the session's requests per minute) waits for its Retry-After and sends again. */
export async function retryingRateLimit(send: () => Promise<void>, onWait: (waiting: boolean) => void) {
  for (;;) {
    try {
      return await send();
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 429) throw error;
      onWait(true);
      await sleep(Math.max(1000, (error.retryAt ?? 0) - Date.now()));
      onWait(false);
    }
  }
}

/**
 * Sends items in one call; when the API refuses them, in halves, down to the single items it refuses, which
 * `onRefused` gets with the reason. Errors of the server or the session stop the import.
 */
export async function sendSplitting<T>(
  items: T[],
  send: (items: T[]) => Promise<void>,
  onRefused: (item: T, reason: string) => void,
): Promise<number> {
  if (items.length === 0) return 0;
  try {
    await send(items);
    return items.length;
  } catch (error) {
    if (!refusesItems(error)) throw error;
    if (items.length === 1) {
      onRefused(items[0]!, reasonOf(error));
      return 0;
    }
    const half = Math.ceil(items.length / 2);
    return (
      (await sendSplitting(items.slice(0, half), send, onRefused)) +
      (await sendSplitting(items.slice(half), send, onRefused))
    );
  }
}

type Lined<T> = T & { line: number };

/** Imports one parsed chunk: its users (each key once), then the assignments of the users that were imported. */
async function importChunk(
  rows: Row[],
  firstLine: number,
  tenantRoles: Set<string>,
  given: BulkSender,
  p: Progress,
  report: () => void,
) {
  const onWait = (waiting: boolean) => {
    p.waiting = waiting;
    report();
  };
  const sender: BulkSender = {
    users: (ops) => retryingRateLimit(() => given.users(ops), onWait),
    assign: (ops) => retryingRateLimit(() => given.assign(ops), onWait),
  };
  const users = new Map<string, Lined<UserOp>>();
  const assigns: Lined<AssignOp>[] = [];
  rows.forEach((row, i) => {
    const line = firstLine + i;
    const checked = checkRow(row, tenantRoles);
    if (typeof checked === "string") {
      p.errors.push({ line, key: text(row.key), problem: checked });
      return;
    }
    users.set(checked.user.key, { ...users.get(checked.user.key), ...checked.user, line });
    if (checked.assign) assigns.push({ ...checked.assign, line });
  });
  const refusedUsers = new Set<string>();
  const userList = [...users.values()];
  for (let i = 0; i < userList.length; i += BATCH) {
    p.users += await sendSplitting(
      userList.slice(i, i + BATCH),
      (ops) => sender.users(ops.map(({ line: _, ...op }) => op)),
      (op, problem) => {
        refusedUsers.add(op.key);
        p.errors.push({ line: op.line, key: op.key, problem });
      },
    );
  }
  const ready = assigns.filter((a) => {
    if (!refusedUsers.has(a.user)) return true;
    p.errors.push({ line: a.line, key: a.user, problem: "Not assigned: the user was not imported." });
    return false;
  });
  for (let i = 0; i < ready.length; i += BATCH) {
    p.assignments += await sendSplitting(
      ready.slice(i, i + BATCH),
      (ops) => sender.assign(ops.map(({ line: _, ...op }) => op)),
      (op, problem) => p.errors.push({ line: op.line, key: op.user, problem }),
    );
  }
}

/**
 * Parses the file a chunk at a time and imports each chunk before reading on; `onProgress` gets a fresh copy of
 * the progress after each chunk. Resolves with the final progress; rejects when the file's header lacks `key` or
 * the server fails.
 */
export function importCsv(
  file: File,
  tenantRoles: Set<string>,
  sender: BulkSender,
  onProgress: (p: Progress) => void,
): Promise<Progress> {
  const p: Progress = {
    read: 0,
    size: file.size,
    rows: 0,
    users: 0,
    assignments: 0,
    errors: [],
    done: false,
  };
  const report = () => onProgress({ ...p, errors: [...p.errors] });
  return new Promise((resolve, reject) => {
    let line = 2;
    let chunks = 0;
    // An abort (a bad header, a failed call) also ends in `complete`: that is not a finished import.
    let failed = false;
    const CHUNK = 256 * 1024;
    Papa.parse<Row>(file, {
      header: true,
      skipEmptyLines: "greedy",
      chunkSize: CHUNK,
      transformHeader: (h) => h.trim().toLowerCase(),
      chunk: (results, parser) => {
        if (!results.meta.fields?.includes("key")) {
          failed = true;
          parser.abort();
          reject(
            new Error(`The file's first line must name the columns, among them key (${COLUMNS.join(", ")}).`),
          );
          return;
        }
        parser.pause();
        const rows = results.data;
        const first = line;
        line += rows.length;
        importChunk(rows, first, tenantRoles, sender, p, report).then(
          () => {
            p.rows += rows.length;
            p.read = Math.min(file.size, ++chunks * CHUNK);
            report();
            parser.resume();
          },
          (error: unknown) => {
            failed = true;
            parser.abort();
            reject(error instanceof Error ? error : new Error(String(error)));
          },
        );
      },
      complete: () => {
        if (failed) return;
        p.read = file.size;
        p.done = true;
        p.errors.sort((a, b) => a.line - b.line);
        report();
        resolve(p);
      },
      error: (error) => reject(error),
    });
  });
}
