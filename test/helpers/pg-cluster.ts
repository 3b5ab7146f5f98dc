import { execFile, spawnSync } from "node:child_process";
import { promisify } from "node:util";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "./process.ts";

/**
 * A throwaway PostgreSQL server of the test's own (never the shared one): a fresh cluster in a temporary folder,
 * listening on 127.0.0.1 on a free port, which the test may stop (as a crash would) and start again.
 */
export interface PgCluster {
  url: string;
  port: number;
  /** `pg_ctl stop -m immediate`: every backend is killed at once, as in a crash. */
  crash(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server (if running) and removes its folder. */
  remove(): Promise<void>;
}

/** The folder with initdb and pg_ctl: the newest PostgreSQL under /usr/lib/postgresql, else the PATH's. */
function binaries(): string | undefined {
  const root = "/usr/lib/postgresql";
  const versions = fs.existsSync(root)
    ? fs
        .readdirSync(root)
        .filter((v) => fs.existsSync(path.join(root, v, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0]) return path.join(root, versions[0], "bin");
  const which = spawnSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" });
  const found = which.stdout.trim();
  return which.status === 0 && found ? path.dirname(found) : undefined;
}

/** initdb refuses to run as root: as root, the cluster belongs to the `postgres` OS user. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => spawnSync("id", [flag, "postgres"], { encoding: "utf8" });
  const uid = id("-u");
  const gid = id("-g");
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Why no throwaway cluster can be made here, or undefined when one can. */
export function pgClusterUnavailable(): string | undefined {
  const bin = binaries();
  if (!bin || !fs.existsSync(path.join(bin, "pg_ctl"))) return "initdb and pg_ctl were not found";
  if (process.getuid?.() === 0 && (!runAs() || spawnSync("runuser", ["--help"]).status !== 0)) {
    return "running as root, and there is no `postgres` OS user (or no runuser) to own a cluster";
  }
  return undefined;
}

export async function createPgCluster(): Promise<PgCluster> {
  const bin = binaries();
  if (!bin) throw new Error("initdb was not found");
  const owner = runAs();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-pg-"));
  if (owner) fs.chownSync(dir, owner.uid, owner.gid);
  const data = path.join(dir, "data");
  // Asynchronous, so that the test's load keeps going while the server stops and starts.
  const run = async (tool: string, args: string[]) => {
    const command = path.join(bin, tool);
    const [file, argv] = owner ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];
    await promisify(execFile)(file, argv, { timeout: 60_000 });
  };
  const port = await freePort();
  try {
    await run("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]);
  } catch (error) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c max_connections=40`;
  let running = false;
  const cluster: PgCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async start() {
      await run("pg_ctl", [
        "start",
        "-D",
        data,
        "-l",
        path.join(dir, "server.log"),
        "-w",
        "-t",
        "60",
        "-o",
        options,
      ]);
      running = true;
    },
    async crash() {
      await run("pg_ctl", ["stop", "-D", data, "-m", "immediate", "-w"]);
      running = false;
    },
    async remove() {
      try {
        if (running) await run("pg_ctl", ["stop", "-D", data, "-m", "immediate", "-w"]);
      } finally {
        running = false;
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
  try {
    await cluster.start();
  } catch (error) {
    await cluster.remove();
    throw error;
  }
  return cluster;
}
