import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { freePort, waitReady, type Proc, type Resources } from "./procs.ts";

/** The Cerbos binary from the npm package @cerbos/cerbos-linux-x64 (a devDependency), if this machine has it. */
export function cerbosBinary(): { path: string; version: string } | { missing: string } {
  if (process.platform !== "linux" || process.arch !== "x64") {
    return {
      missing: `Cerbos is only installed from npm for linux-x64 here (this is ${process.platform}-${process.arch})`,
    };
  }
  try {
    const require = createRequire(import.meta.url);
    const pkg = require.resolve("@cerbos/cerbos-linux-x64/package.json");
    const version = (JSON.parse(fs.readFileSync(pkg, "utf8")) as { version: string }).version;
    const bin = path.join(path.dirname(pkg), "cerbos-linux-x64");
    fs.accessSync(bin, fs.constants.X_OK);
    return { path: bin, version };
  } catch (e) {
    return { missing: `@cerbos/cerbos-linux-x64 is not installed (npm install): ${String(e)}` };
  }
}

/**
 * The tenant RBAC policy of the PDP scenario in Cerbos terms. Cerbos keeps no facts, so the caller sends the
 * user's roles per tenant as a principal attribute ({tenant: [roles]}); derived roles pick the ones of the
 * resource's tenant, and the resource policy grants what our tenant roles grant.
 */
export function cerbosPolicies(
  rolePermissions: Record<string, string[]>,
  resource: string,
): Record<string, string> {
  const roles = Object.keys(rolePermissions);
  const derived = [
    "apiVersion: api.cerbos.dev/v1",
    "derivedRoles:",
    "  name: tenant_roles",
    "  definitions:",
    ...roles.flatMap((role) => [
      `    - name: tenant_${role}`,
      '      parentRoles: ["user"]',
      "      condition:",
      "        match:",
      `          expr: 'R.attr.tenant in P.attr.tenant_roles && "${role}" in P.attr.tenant_roles[R.attr.tenant]'`,
    ]),
  ].join("\n");
  const actions = [...new Set(Object.values(rolePermissions).flat())];
  const policy = [
    "apiVersion: api.cerbos.dev/v1",
    "resourcePolicy:",
    '  version: "default"',
    `  resource: "${resource}"`,
    "  importDerivedRoles:",
    "    - tenant_roles",
    "  rules:",
    ...actions.flatMap((action) => [
      `    - actions: ["${action}"]`,
      "      effect: EFFECT_ALLOW",
      `      derivedRoles: [${roles
        .filter((role) => rolePermissions[role]?.includes(action))
        .map((role) => `"tenant_${role}"`)
        .join(", ")}]`,
    ]),
  ].join("\n");
  return { "derived_roles.yaml": derived + "\n", [`${resource}.yaml`]: policy + "\n" };
}

export interface Cerbos {
  proc: Proc;
  url: string;
  version: string;
}

/** Starts Cerbos on loopback with telemetry and audit off, serving the policies from a temp dir. */
export async function startCerbos(
  res: Resources,
  bin: string,
  version: string,
  policies: Record<string, string>,
): Promise<Cerbos> {
  const dir = res.tempDir("cerbos");
  const policyDir = path.join(dir, "policies");
  fs.mkdirSync(policyDir);
  for (const [name, text] of Object.entries(policies)) fs.writeFileSync(path.join(policyDir, name), text);
  const httpPort = await freePort();
  const grpcPort = await freePort();
  const config = [
    "server:",
    `  httpListenAddr: "127.0.0.1:${httpPort}"`,
    `  grpcListenAddr: "127.0.0.1:${grpcPort}"`,
    "storage:",
    "  driver: disk",
    "  disk:",
    `    directory: "${policyDir}"`,
    "    watchForChanges: false",
    "telemetry:",
    "  disabled: true",
    "audit:",
    "  enabled: false",
    "",
  ].join("\n");
  const configFile = path.join(dir, "config.yaml");
  fs.writeFileSync(configFile, config);
  const proc = res.spawn("cerbos", bin, ["server", `--config=${configFile}`, "--log-level=error"], {
    CERBOS_NO_TELEMETRY: "1",
  });
  const url = `http://127.0.0.1:${httpPort}`;
  await waitReady(proc, `${url}/_cerbos/health`, 60_000);
  return { proc, url, version };
}
