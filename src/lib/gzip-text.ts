import { promisify } from "node:util";
import zlib from "node:zlib";

/*
 * Text kept gzip-compressed (the API log's large bodies). Both directions run on libuv's thread pool, not on the
 * event loop. Level 1: JSON pages shrink about as much as at the default level, several times as fast.
 */

const gzip = promisify(zlib.gzip);
const gunzip = promisify(zlib.gunzip);

export const gzipText = (text: string): Promise<Buffer> => gzip(text, { level: 1 });

/** Bytes as either database driver returns them (a Buffer, or a Uint8Array from a SQLite thread). */
export const gunzipText = async (bytes: Uint8Array): Promise<string> =>
  (await gunzip(bytes)).toString("utf8");
