import os from "node:os";
import fs from "node:fs";

export interface Machine {
  cpu_model: string;
  cores: number;
  memory_gb: number;
  node: string;
  os: string;
  load_average: number[];
}

function osName(): string {
  try {
    const release = fs.readFileSync("/etc/os-release", "utf8");
    const pretty = /^PRETTY_NAME="?([^"\n]*)"?/m.exec(release)?.[1];
    if (pretty) return `${pretty} (${os.type()} ${os.release()})`;
  } catch {
    // not Linux, or no os-release
  }
  return `${os.type()} ${os.release()}`;
}

export function describeMachine(): Machine {
  return {
    cpu_model: os.cpus()[0]?.model.trim() ?? "unknown",
    cores: os.cpus().length,
    memory_gb: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    os: osName(),
    load_average: os.loadavg().map((load) => Math.round(load * 100) / 100),
  };
}

export function loadAverage(): number[] {
  return os.loadavg().map((load) => Math.round(load * 100) / 100);
}
