import type { FastifyInstance, InjectOptions } from "fastify";
import type { Store } from "../../src/db/store.ts";
import type { AccessLevel, ScopeLevel } from "../../src/lib/access.ts";
import { hashPassword } from "../../src/lib/passwords.ts";
import { insertMember, putGrant } from "../../src/domain/member-records.ts";
import { PUBLIC_URL, type Reply } from "./app.ts";

export const PASSWORD = "a long and unusual passphrase";
let hashed: Promise<string> | undefined;

export interface TestGrant {
  organizationId: string;
  level?: ScopeLevel;
  access?: AccessLevel;
  projectId?: string;
  environmentId?: string;
}

/** A member with PASSWORD and the grants given (an organization admin grant when none is given). */
export async function addMember(store: Store, email: string, grants: TestGrant[]): Promise<string> {
  hashed ??= hashPassword(PASSWORD);
  const row = await insertMember(store.db, { email, passwordHash: await hashed });
  for (const g of grants) {
    await putGrant(store.db, row.id, {
      organizationId: g.organizationId,
      level: g.level ?? "org",
      access: g.access ?? "admin",
      projectId: g.projectId ?? null,
      environmentId: g.environmentId ?? null,
    });
  }
  return row.id;
}

export interface Session {
  cookie: string;
  csrf: string;
  body: Record<string, unknown>;
}

function asReply(res: Awaited<ReturnType<FastifyInstance["inject"]>>): Reply {
  let json: unknown;
  try {
    json = res.body === "" ? undefined : JSON.parse(res.body);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, body: res.body, json };
}

/** A JSON call with no credential (the public routes) */
export async function anonymous(
  app: FastifyInstance,
  method: InjectOptions["method"],
  url: string,
  body?: unknown,
) {
  return asReply(
    await app.inject({
      method,
      url,
      ...(body !== undefined && { payload: body as InjectOptions["payload"] }),
    }),
  );
}

/** Logs in; throws unless the login succeeds. */
export async function login(app: FastifyInstance, email: string, password = PASSWORD): Promise<Session> {
  const res = await anonymous(app, "POST", "/v2/auth/login", { email, password });
  if (res.status !== 200) throw new Error(`login ${email}: ${res.status} ${res.body}`);
  return sessionOf(res);
}

export function sessionOf(res: Reply): Session {
  const setCookie = String(res.headers["set-cookie"] ?? "");
  const cookie = setCookie.split(";")[0] ?? "";
  return { cookie, csrf: res.json.csrf_token, body: res.json };
}

/** A call with the session's cookie; writes carry its CSRF token and the public origin unless told otherwise. */
export async function asMember(
  app: FastifyInstance,
  session: Session,
  method: InjectOptions["method"],
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const write = method !== "GET";
  return asReply(
    await app.inject({
      method,
      url,
      headers: {
        cookie: session.cookie,
        ...(write && { "x-csrf-token": session.csrf, origin: PUBLIC_URL }),
        ...headers,
      },
      ...(body !== undefined && { payload: body as InjectOptions["payload"] }),
    }),
  );
}
