import { takeFlags } from "./args.ts";
import { MEMBERS_USAGE } from "./usage.ts";
import { ConfigError, loadConfig } from "../config.ts";
import { migrateToLatest, type Store } from "../db/store.ts";
import { AppError } from "../lib/errors.ts";
import { assertAcceptablePassword, hashPassword } from "../lib/passwords.ts";
import {
  findMemberByEmail,
  firstOrganizationId,
  insertMemberWithGrant,
  orgAdminGrant,
  putGrant,
  setPasswordHash,
} from "../domain/member-records.ts";
import { deleteMemberSessions } from "../domain/session-records.ts";
import { deleteTwoFactor } from "../domain/two-factor-records.ts";

const ROLES = new Set(["admin", "write", "read", "no_access"]);
const SUBCOMMANDS = new Set(["add", "reset-password", "reset-2fa"]);

async function readPassword(env: NodeJS.ProcessEnv, stdin: NodeJS.ReadableStream): Promise<string> {
  const fromEnv = env["GATEHOUSE_MEMBER_PASSWORD"];
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  let text = "";
  for await (const chunk of stdin) {
    text += String(chunk);
    if (text.includes("\n")) break;
  }
  const line = text.split(/\r?\n/)[0] ?? "";
  if (line === "") throw new ConfigError("no password: set GATEHOUSE_MEMBER_PASSWORD or write it to stdin");
  return line;
}

/** `gatehouse members ...`: its own flags (--email, --role, --org), then the service's flags for the database. */
export async function membersCommand(
  argv: string[],
  openStore: (config: ReturnType<typeof loadConfig>) => Store,
  io: { env: NodeJS.ProcessEnv; stdin: NodeJS.ReadableStream; print: (line: string) => void },
): Promise<number> {
  const [sub, ...rest] = argv;
  const { values, rest: configFlags } = takeFlags(rest, ["email", "role", "org"]);
  const email = values.email;
  if (!SUBCOMMANDS.has(sub ?? "") || !email) {
    throw new ConfigError(`usage:\n${MEMBERS_USAGE}`);
  }
  const role = values.role ?? "admin";
  if (!ROLES.has(role)) throw new ConfigError(`--role must be one of ${[...ROLES].join(", ")}`);
  const config = loadConfig(configFlags, io.env);
  const store = openStore(config);
  try {
    await migrateToLatest(store);
    const existing = await findMemberByEmail(store.db, email);
    if (sub === "reset-2fa") {
      if (!existing) throw new ConfigError(`no member with the e-mail ${email}`);
      await store.db.transaction().execute(async (trx) => {
        await deleteTwoFactor(trx, existing.id);
        await deleteMemberSessions(trx, existing.id);
      });
      io.print(`Second factor removed for ${existing.email}; its sessions have ended. It may enrol again.`);
      return 0;
    }
    if (sub === "reset-password") {
      if (!existing) throw new ConfigError(`no member with the e-mail ${email}`);
      const password = await readPassword(io.env, io.stdin);
      assertAcceptablePassword(password, existing.email);
      const hash = await hashPassword(password);
      await store.db.transaction().execute(async (trx) => {
        await setPasswordHash(trx, existing.id, hash);
        await deleteMemberSessions(trx, existing.id);
      });
      io.print(`New password set for ${existing.email}; its sessions have ended.`);
      return 0;
    }
    const org = values.org;
    const organizationId = await firstOrganizationId(store.db, org);
    if (!organizationId)
      throw new ConfigError(org ? `no organization with the key ${org}` : "no organization yet");
    const grant = orgAdminGrant(organizationId, role as "admin");
    if (existing) {
      await putGrant(store.db, existing.id, grant);
      io.print(`${existing.email} is now ${role} of the organization (password unchanged).`);
      return 0;
    }
    const password = await readPassword(io.env, io.stdin);
    assertAcceptablePassword(password, email);
    const passwordHash = await hashPassword(password);
    await store.db.transaction().execute((trx) => insertMemberWithGrant(trx, { email, passwordHash }, grant));
    io.print(`Added ${email.toLowerCase()} as ${role} of the organization.`);
    return 0;
  } catch (e) {
    if (e instanceof AppError) throw new ConfigError(e.message);
    throw e;
  } finally {
    await store.close();
  }
}
