import type { Kysely } from "kysely";
import type { Database } from "../db/types.ts";
import type { AccessLevel, ScopeLevel } from "../lib/access.ts";
import type { SecretBox } from "../lib/secrets.ts";
import { createKeyRecord } from "../domain/api-key-records.ts";
import { findOrganization, type OrganizationRow } from "../domain/organization-records.ts";
import { findProject } from "../domain/project-records.ts";
import { findEnvironment } from "../domain/environment-records.ts";
import { listApiKeys } from "../modules/api-keys/api-keys.repo.ts";
import { UsageError } from "./args.ts";

/**
 * `gatehouse keys create|list`: API keys made and listed on the database directly, with no key needed, for an
 * operator who lost every admin key. Keys are made by the same record code as `POST /v2/api-key`.
 */

export const KEY_FLAGS = ["org", "scope", "project", "env", "access", "name"] as const;
export type KeyFlags = Partial<Record<(typeof KEY_FLAGS)[number], string>>;

const SCOPES: Record<string, ScopeLevel> = { org: "org", project: "project", environment: "env", env: "env" };
const SCOPE_NAMES: Record<string, string> = { org: "organization", project: "project", env: "environment" };
const ACCESS: readonly AccessLevel[] = ["admin", "write", "read"];

/** The organization named by --org, or the only one there is. */
async function organizationOf(db: Kysely<Database>, ref: string | undefined): Promise<OrganizationRow> {
  if (ref !== undefined) {
    const found = await findOrganization(db, ref);
    if (!found) throw new UsageError(`no organization with the id or key "${ref}"`);
    return found;
  }
  const all = await db.selectFrom("organizations").selectAll().orderBy("created_at").limit(2).execute();
  if (all.length === 1) return all[0] as OrganizationRow;
  throw new UsageError(
    all.length === 0
      ? "there is no organization yet: start the server once"
      : "name the organization with --org",
  );
}

export async function createKey(
  db: Kysely<Database>,
  box: SecretBox,
  flags: KeyFlags,
  print: (line: string) => void,
): Promise<void> {
  const scope = SCOPES[flags.scope ?? ""];
  if (!scope) throw new UsageError("--scope must be org, project or environment");
  const access = (flags.access ?? "admin") as AccessLevel;
  if (!ACCESS.includes(access)) throw new UsageError("--access must be admin, write or read");
  const organization = await organizationOf(db, flags.org);
  let project: { id: string; key: string } | undefined;
  let environment: { id: string; key: string } | undefined;
  if (scope !== "org") {
    if (!flags.project) throw new UsageError(`--scope ${flags.scope} needs --project`);
    project = await findProject(db, organization.id, flags.project);
    if (!project) throw new UsageError(`no project "${flags.project}" in organization ${organization.key}`);
  }
  if (scope === "env") {
    if (!flags.env) throw new UsageError("--scope environment needs --env");
    environment = await findEnvironment(db, (project as { id: string }).id, flags.env);
    if (!environment) throw new UsageError(`no environment "${flags.env}" in project ${project?.key}`);
  }
  const key = await createKeyRecord(db, box, {
    organizationId: organization.id,
    projectId: project?.id ?? null,
    environmentId: environment?.id ?? null,
    objectType: scope,
    accessLevel: access,
    name: flags.name ?? "created with gatehouse keys create",
  });
  const where = [organization.key, project?.key, environment?.key].filter(Boolean).join("/");
  print(
    `Created ${access === "admin" ? "an" : "a"} ${access} key for ${where} (id ${key.id}). Its secret (shown once, keep it safe):`,
  );
  print(`  ${key.secret}`);
}

export async function listKeys(
  db: Kysely<Database>,
  flags: KeyFlags,
  print: (line: string) => void,
): Promise<void> {
  const organizations =
    flags.org === undefined
      ? await db.selectFrom("organizations").selectAll().orderBy("created_at").execute()
      : [await organizationOf(db, flags.org)];
  const projects = new Map(
    (await db.selectFrom("projects").select(["id", "key"]).execute()).map((p) => [p.id, p.key]),
  );
  const environments = new Map(
    (await db.selectFrom("environments").select(["id", "key"]).execute()).map((e) => [e.id, e.key]),
  );
  const rows: string[][] = [["ORGANIZATION", "SCOPE", "ACCESS", "PREFIX", "ID", "CREATED", "NAME"]];
  for (const organization of organizations) {
    const { rows: keys } = await listApiKeys(db, organization.id, {}, 0, Number.MAX_SAFE_INTEGER);
    for (const key of keys) {
      const path = [
        key.project_id && projects.get(key.project_id),
        key.environment_id && environments.get(key.environment_id),
      ];
      rows.push([
        organization.key,
        [SCOPE_NAMES[key.object_type] ?? key.object_type, path.filter(Boolean).join("/")].join(" ").trim(),
        key.access_level,
        `${key.secret_prefix}...`,
        key.id,
        key.created_at,
        key.name ?? "",
      ]);
    }
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const row of rows)
    print(
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    );
}
