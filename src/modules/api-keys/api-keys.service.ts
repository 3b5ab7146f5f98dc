import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import type { Db } from "../../db/db.ts";
import { enqueueEvents } from "../../changes/events.ts";
import { type AccessLevel, type Principal, type ScopeLevel } from "../../lib/access.ts";
import { AppError, forbidden, invalid, notFound } from "../../lib/errors.ts";
import { envelope, offsetOf, type PageRequest } from "../../lib/pagination.ts";
import { displayPrefix, hashSecret, type SecretBox } from "../../lib/secrets.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { createKeyRecord, type ApiKeyRow } from "../../domain/api-key-records.ts";
import { environmentRead, findEnvironment } from "../../domain/environment-records.ts";
import { findProject, projectRead } from "../../domain/project-records.ts";
import { findMemberById, lockOrganization } from "../../domain/member-records.ts";
import {
  countOrgAdminKeys,
  deleteApiKey,
  findApiKey,
  findEnvironmentKey,
  listApiKeys,
  replaceSecret,
} from "./api-keys.repo.ts";
import type { APIKeyCreate, APIKeyRead } from "./api-keys.schemas.ts";

async function keyRead(db: Kysely<Database>, row: ApiKeyRow, secret?: string): Promise<APIKeyRead> {
  const out: APIKeyRead = {
    id: row.id,
    organization_id: row.organization_id,
    ...(row.project_id !== null && { project_id: row.project_id }),
    ...(row.environment_id !== null && { environment_id: row.environment_id }),
    object_type: row.object_type as ScopeLevel,
    access_level: row.access_level as AccessLevel,
    owner_type: row.owner_type as APIKeyRead["owner_type"],
    ...(row.name !== null && { name: row.name }),
    created_at: row.created_at,
    ...(row.last_used_at !== null && { last_used_at: row.last_used_at }),
  };
  if (secret !== undefined) out.secret = secret;
  if (row.created_by_member_id) {
    const m = await findMemberById(db, row.created_by_member_id);
    if (m) {
      out.created_by_member = {
        id: m.id,
        email: m.email,
        email_verified: false,
        is_superuser: false,
        is_onboarding: m.onboarding_step !== "done",
        onboarding_step: m.onboarding_step,
        created_at: m.created_at,
        identities: [],
        settings: {},
      };
    }
  }
  if (row.created_by_key_id) {
    const k = await findApiKey(db, row.organization_id, row.created_by_key_id);
    if (k) out.created_by_key = { id: k.id, ...(k.name !== null && { name: k.name }) };
  }
  if (row.project_id) {
    const p = await db.selectFrom("projects").selectAll().where("id", "=", row.project_id).executeTakeFirst();
    if (p) out.project = projectRead(p);
  }
  if (row.environment_id) {
    const e = await db
      .selectFrom("environments")
      .selectAll()
      .where("id", "=", row.environment_id)
      .executeTakeFirst();
    if (e) out.env = environmentRead(e);
  }
  return out;
}

/** The scope a new key's body asks for, as ids: 422 for a body that does not fit its type, 404 for what is not there. */
async function newKeyScope(db: Kysely<Database>, organizationId: string, body: APIKeyCreate) {
  const objectType = body.object_type ?? "env";
  if (objectType === "org") {
    if (body.project_id || body.environment_id) {
      throw invalid("an organization key takes neither project_id nor environment_id", [
        "body",
        "object_type",
      ]);
    }
    return { objectType, projectId: null, environmentId: null };
  }
  if (!body.project_id) throw invalid(`a ${objectType} key needs project_id`, ["body", "project_id"]);
  const project = await findProject(db, organizationId, body.project_id);
  if (!project) throw notFound("project", body.project_id);
  if (objectType === "project") {
    if (body.environment_id)
      throw invalid("a project key takes no environment_id", ["body", "environment_id"]);
    return { objectType, projectId: project.id, environmentId: null };
  }
  if (!body.environment_id) throw invalid("an env key needs environment_id", ["body", "environment_id"]);
  const environment = await findEnvironment(db, project.id, body.environment_id);
  if (!environment) throw notFound("environment", body.environment_id);
  return { objectType, projectId: project.id, environmentId: environment.id };
}

/** A key's webhook event (docs/events.md): what names the key and its scope, never its secret. */
const enqueueKeyEvent = (trx: Db, row: ApiKeyRow, type: string) =>
  enqueueEvents(
    trx,
    { organization_id: row.organization_id, project_id: row.project_id, environment_id: row.environment_id },
    [
      {
        type,
        data: {
          api_key: {
            id: row.id,
            name: row.name,
            object_type: row.object_type,
            access_level: row.access_level,
            owner_type: row.owner_type,
          },
        },
      },
    ],
  );

export function createApiKeysService(deps: {
  db: Kysely<Database>;
  box: SecretBox;
  onKeysChanged?: () => void;
}) {
  const { db, box } = deps;

  const reveal = (row: ApiKeyRow): string => {
    const secret = box.open(row.secret_sealed);
    if (secret === undefined) {
      throw new AppError(
        "CONFLICT",
        "this key's secret cannot be decrypted with the server's GATEHOUSE_SECRET_KEY; rotate it",
      );
    }
    return secret;
  };

  async function mustFind(principal: Principal, id: string): Promise<ApiKeyRow> {
    const row = await findApiKey(db, principal.organizationId, id);
    if (!row) throw notFound("API key", id);
    return row;
  }

  return {
    scopeOf(principal: Principal) {
      return {
        organization_id: principal.organizationId,
        ...(principal.projectId !== null && { project_id: principal.projectId }),
        ...(principal.environmentId !== null && { environment_id: principal.environmentId }),
      };
    },

    async list(principal: Principal, filter: { objectType?: string; projRef?: string }, page: PageRequest) {
      let projectId: string | undefined;
      if (filter.projRef) {
        const p = await findProject(db, principal.organizationId, filter.projRef);
        if (!p) throw notFound("project", filter.projRef);
        projectId = p.id;
      }
      const { rows, total } = await listApiKeys(
        db,
        principal.organizationId,
        { objectType: filter.objectType, projectId },
        offsetOf(page),
        page.perPage,
      );
      return envelope(await Promise.all(rows.map((r) => keyRead(db, r))), total, page);
    },

    async create(principal: Principal, body: APIKeyCreate): Promise<APIKeyRead> {
      if (body.organization_id && body.organization_id.toLowerCase() !== principal.organizationId) {
        throw forbidden("an API key can only create keys of its own organization");
      }
      const scope = await newKeyScope(db, principal.organizationId, body);
      const row = await db.transaction().execute(async (trx) => {
        const created = await createKeyRecord(trx, box, {
          organizationId: principal.organizationId,
          ...scope,
          accessLevel: body.access_level ?? "admin",
          ownerType: body.owner_type ?? "member",
          name: body.name ?? null,
          createdByMemberId: principal.member?.id ?? null,
          createdByKeyId: principal.member ? null : principal.keyId,
        });
        await enqueueKeyEvent(trx, created, "api_key.created");
        return created;
      });
      return keyRead(db, row, row.secret);
    },

    async get(principal: Principal, id: string): Promise<APIKeyRead> {
      const row = await mustFind(principal, id);
      return keyRead(db, row, reveal(row));
    },

    async remove(principal: Principal, id: string): Promise<void> {
      const row = await mustFind(principal, id);
      await db.transaction().execute(async (trx) => {
        await lockOrganization(trx, row.organization_id);
        if (
          row.object_type === "org" &&
          row.access_level === "admin" &&
          (await countOrgAdminKeys(trx, row.organization_id)) <= 1
        ) {
          throw new AppError(
            "CONFLICT",
            "this is the organization's last admin key; create another before deleting it",
          );
        }
        await deleteApiKey(trx, row.id);
        await enqueueKeyEvent(trx, row, "api_key.deleted");
      });
      deps.onKeysChanged?.();
    },

    async rotate(principal: Principal, id: string): Promise<APIKeyRead> {
      const row = await mustFind(principal, id);
      const secret = box.newSecret();
      const updated = await db.transaction().execute(async (trx) => {
        const replaced = await replaceSecret(trx, row.id, {
          hash: hashSecret(secret),
          prefix: displayPrefix(secret),
          sealed: box.seal(secret),
        });
        await enqueueKeyEvent(trx, replaced, "api_key.rotated");
        return replaced;
      });
      deps.onKeysChanged?.();
      return keyRead(db, updated, secret);
    },

    /** The environment's own key (created with the environment), with its secret, for organization admins. */
    async environmentKey({ organizationId, project, environment }: EnvScope): Promise<APIKeyRead> {
      const row =
        (await findEnvironmentKey(db, environment.id)) ??
        (await createKeyRecord(db, box, {
          organizationId,
          projectId: project.id,
          environmentId: environment.id,
          objectType: "env",
          name: `${environment.key} environment key`,
        }));
      return keyRead(db, row, reveal(row));
    },
  };
}

export type ApiKeysService = ReturnType<typeof createApiKeysService>;
