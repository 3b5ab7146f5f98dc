import { Type, type TObject, type TSchema } from "typebox";
import { Ajv, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import { Description, Key, Name, Nullable, Timestamp, Uuid } from "../lib/schemas.ts";
import { USER_KEY_PATTERN } from "./facts/facts.schemas.ts";
import { Email, OnboardingStep } from "./member.schemas.ts";
import { AccessLevelSchema, OwnerTypeSchema, ScopeLevelSchema } from "./api-key.schemas.ts";
import { ConditionSetType } from "./schema/schema.schemas.ts";
import type { Database } from "../db/types.ts";

/**
 * What an organization's export may hold, table by table: each row's columns with the bounds the API puts on
 * the same values (its TypeBox pieces), what each id column must name among the file's own rows, and the columns
 * a row is ordered by. An import checks every row against these before anything is written (issue 36).
 */

/** Free text the API never takes from a client (internal names, kinds), bounded all the same. */
const Text = (maxLength = 255) => Type.String({ maxLength });
const Flag = Type.Union([Type.Literal(0), Type.Literal(1)]);
const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const PersonName = Type.String({ maxLength: 255 });
const UserKey = Type.String({ pattern: USER_KEY_PATTERN, minLength: 1, maxLength: 255 });
/** A generated key (set rules, derived names): the API's key bound, any characters. */
const AnyKey = Type.String({ minLength: 1, maxLength: 1024 });

/**
 * JSON text columns. `object`: must parse to a JSON object (what the API's JsonObject takes); `any`: must parse;
 * `text`: log bodies as they were stored. Bounded by the request body limit, or the log limit for log columns.
 */
export type JsonKind = "object" | "any" | "text";
const JsonText = Type.String();

const scoped = { id: Uuid, organization_id: Uuid, project_id: Uuid, environment_id: Uuid };
const stamped = { created_at: Timestamp, updated_at: Timestamp };

interface TableRules {
  columns: TObject;
  /** Columns that must name a row of that table in the same file (null allowed where the column is nullable). */
  refs?: Record<string, keyof Database>;
  json?: Record<string, JsonKind>;
  /** Columns ordering the table's rows uniquely (its primary key or a unique index). */
  order?: string[];
}

const optional = <T extends TSchema>(schema: T) => Type.Optional(schema);

const SCOPED_REFS = { project_id: "projects", environment_id: "environments" } as const;

/** Actions and action groups: the same columns. */
const OF_A_RESOURCE = {
  columns: Type.Object({
    ...scoped,
    resource_id: Uuid,
    key: Key(),
    name: Name,
    description: Nullable(Description),
    attributes: Nullable(JsonText),
    ...stamped,
  }),
  refs: { ...SCOPED_REFS, resource_id: "resources" },
  json: { attributes: "object" },
} satisfies TableRules;

export const TABLE_RULES = {
  organizations: {
    columns: Type.Object({
      id: Uuid,
      key: Key(),
      name: Name,
      settings: Nullable(JsonText),
      is_enterprise: Flag,
      ...stamped,
      frozen_at: optional(Type.Null()),
      exported_at: optional(Type.Null()),
      exported_digest: optional(Type.Null()),
    }),
    json: { settings: "object" },
  },
  projects: {
    columns: Type.Object({
      id: Uuid,
      organization_id: Uuid,
      key: Key(),
      name: Name,
      description: Nullable(Description),
      urn_namespace: Nullable(Type.String({ maxLength: 255 })),
      settings: Nullable(JsonText),
      active_policy_repo_id: Nullable(Uuid),
      ...stamped,
    }),
    json: { settings: "object" },
  },
  environments: {
    columns: Type.Object({
      id: Uuid,
      organization_id: Uuid,
      project_id: Uuid,
      key: Key(),
      name: Name,
      description: Nullable(Description),
      custom_branch_name: Nullable(Type.String({ maxLength: 255 })),
      avp_policy_store_id: Nullable(Text()),
      jwks: Nullable(JsonText),
      settings: Nullable(JsonText),
      revision: Count,
      // Absent from exports made before change-feed retention: their feeds were whole (0).
      changes_kept_after: optional(Count),
      ...stamped,
    }),
    refs: { project_id: "projects" },
    json: { jwks: "object", settings: "object" },
  },
  members: {
    columns: Type.Object({
      id: Uuid,
      email: Email,
      password_hash: Nullable(Type.String({ pattern: "^\\$argon2", maxLength: 512 })),
      first_name: Nullable(PersonName),
      last_name: Nullable(PersonName),
      settings: Nullable(JsonText),
      onboarding_step: OnboardingStep,
      ...stamped,
      last_login: Nullable(Timestamp),
      last_ip: Nullable(Text(64)),
      logins_count: Count,
    }),
    json: { settings: "object" },
  },
  member_grants: {
    columns: Type.Object({
      id: Uuid,
      member_id: Uuid,
      organization_id: Uuid,
      project_id: Nullable(Uuid),
      environment_id: Nullable(Uuid),
      object_type: ScopeLevelSchema,
      access_level: AccessLevelSchema,
      created_at: Timestamp,
    }),
    refs: { member_id: "members", ...SCOPED_REFS },
  },
  api_keys: {
    columns: Type.Object({
      id: Uuid,
      organization_id: Uuid,
      project_id: Nullable(Uuid),
      environment_id: Nullable(Uuid),
      object_type: ScopeLevelSchema,
      access_level: AccessLevelSchema,
      owner_type: OwnerTypeSchema,
      name: Nullable(Name),
      // Secrets never travel: the importing deployment issues new ones.
      secret_hash: Type.Null(),
      secret_prefix: Text(64),
      secret_sealed: Type.Null(),
      created_at: Timestamp,
      last_used_at: Nullable(Timestamp),
      created_by_member_id: Nullable(Uuid),
      created_by_key_id: optional(Nullable(Uuid)),
    }),
    refs: { ...SCOPED_REFS, created_by_member_id: "members", created_by_key_id: "api_keys" },
  },
  tenants: {
    columns: Type.Object({
      ...scoped,
      key: Key(),
      name: Name,
      description: Nullable(Description),
      attributes: Nullable(JsonText),
      ...stamped,
      last_action_at: Timestamp,
    }),
    refs: SCOPED_REFS,
    json: { attributes: "object" },
  },
  changes: {
    columns: Type.Object({
      environment_id: Uuid,
      revision: Count,
      seq: Count,
      kind: Text(64),
      op: Text(64),
      data: JsonText,
      created_at: Timestamp,
    }),
    refs: { environment_id: "environments" },
    json: { data: "any" },
    order: ["environment_id", "revision", "seq"],
  },
  resources: {
    columns: Type.Object({
      ...scoped,
      key: Key(),
      name: Name,
      description: Nullable(Description),
      urn: Nullable(Type.String({ maxLength: 1024 })),
      type_attributes: Nullable(JsonText),
      built_in: Flag,
      ...stamped,
    }),
    refs: SCOPED_REFS,
    json: { type_attributes: "object" },
  },
  resource_actions: OF_A_RESOURCE,
  resource_attributes: {
    columns: Type.Object({
      ...scoped,
      resource_id: Uuid,
      key: Key(),
      type: Text(64),
      description: Nullable(Description),
      built_in: Flag,
      ...stamped,
    }),
    refs: { ...SCOPED_REFS, resource_id: "resources" },
  },
  action_groups: OF_A_RESOURCE,
  action_group_actions: {
    columns: Type.Object({ environment_id: Uuid, action_group_id: Uuid, action_id: Uuid }),
    refs: { environment_id: "environments", action_group_id: "action_groups", action_id: "resource_actions" },
    order: ["action_group_id", "action_id"],
  },
  roles: {
    columns: Type.Object({
      ...scoped,
      resource_id: Nullable(Uuid),
      key: Key(),
      name: Name,
      description: Nullable(Description),
      attributes: Nullable(JsonText),
      no_direct_roles_on_object: Flag,
      ...stamped,
    }),
    refs: { ...SCOPED_REFS, resource_id: "resources" },
    json: { attributes: "object" },
  },
  role_permissions: {
    columns: Type.Object({ environment_id: Uuid, role_id: Uuid, action_id: Uuid }),
    refs: { environment_id: "environments", role_id: "roles", action_id: "resource_actions" },
    order: ["role_id", "action_id"],
  },
  role_extends: {
    columns: Type.Object({ environment_id: Uuid, role_id: Uuid, extends_role_id: Uuid }),
    refs: { environment_id: "environments", role_id: "roles", extends_role_id: "roles" },
    order: ["role_id", "extends_role_id"],
  },
  relations: {
    columns: Type.Object({
      ...scoped,
      object_resource_id: Uuid,
      subject_resource_id: Uuid,
      key: Key(),
      name: Name,
      description: Nullable(Description),
      ...stamped,
    }),
    refs: { ...SCOPED_REFS, object_resource_id: "resources", subject_resource_id: "resources" },
  },
  role_derivations: {
    columns: Type.Object({
      id: Uuid,
      environment_id: Uuid,
      role_id: Uuid,
      source_role_id: Uuid,
      relation_id: Uuid,
      no_direct_roles_on_object: Flag,
      created_at: Timestamp,
    }),
    refs: {
      environment_id: "environments",
      role_id: "roles",
      source_role_id: "roles",
      relation_id: "relations",
    },
  },
  users: {
    columns: Type.Object({
      ...scoped,
      key: UserKey,
      email: Nullable(Type.String({ format: "email", maxLength: 320 })),
      first_name: Nullable(PersonName),
      last_name: Nullable(PersonName),
      attributes: Nullable(JsonText),
      ...stamped,
    }),
    refs: SCOPED_REFS,
    json: { attributes: "object" },
  },
  resource_instances: {
    columns: Type.Object({
      ...scoped,
      resource_id: Uuid,
      tenant_id: Uuid,
      key: Key(),
      attributes: Nullable(JsonText),
      ...stamped,
    }),
    refs: { ...SCOPED_REFS, resource_id: "resources", tenant_id: "tenants" },
    json: { attributes: "object" },
  },
  role_assignments: {
    columns: Type.Object({
      ...scoped,
      user_id: Uuid,
      role_id: Uuid,
      tenant_id: Uuid,
      resource_instance_id: Nullable(Uuid),
      created_at: Timestamp,
      expires_at: Nullable(Timestamp),
    }),
    refs: {
      ...SCOPED_REFS,
      user_id: "users",
      role_id: "roles",
      tenant_id: "tenants",
      resource_instance_id: "resource_instances",
    },
  },
  relationship_tuples: {
    columns: Type.Object({
      ...scoped,
      subject_id: Uuid,
      relation_id: Uuid,
      object_id: Uuid,
      tenant_id: Uuid,
      ...stamped,
    }),
    refs: {
      ...SCOPED_REFS,
      subject_id: "resource_instances",
      relation_id: "relations",
      object_id: "resource_instances",
      tenant_id: "tenants",
    },
  },
  condition_sets: {
    columns: Type.Object({
      ...scoped,
      key: AnyKey,
      type: ConditionSetType,
      autogenerated: Flag,
      resource_id: Nullable(Uuid),
      parent_id: Nullable(Uuid),
      name: Name,
      description: Nullable(Description),
      conditions: Nullable(JsonText),
      ...stamped,
    }),
    refs: { ...SCOPED_REFS, resource_id: "resources", parent_id: "condition_sets" },
    json: { conditions: "any" },
  },
  condition_set_rules: {
    columns: Type.Object({
      ...scoped,
      key: AnyKey,
      user_set_id: Uuid,
      action_id: Uuid,
      resource_set_id: Uuid,
      ...stamped,
    }),
    refs: {
      ...SCOPED_REFS,
      user_set_id: "condition_sets",
      action_id: "resource_actions",
      resource_set_id: "condition_sets",
    },
  },
  proxy_configs: {
    columns: Type.Object({
      ...scoped,
      key: Key(),
      name: Name,
      secret: JsonText,
      auth_mechanism: Text(64),
      mapping_rules: JsonText,
      ...stamped,
    }),
    refs: SCOPED_REFS,
    json: { secret: "any", mapping_rules: "any" },
  },
  api_log: {
    columns: Type.Object({
      id: Uuid,
      organization_id: Uuid,
      // The project or environment a call named may be gone since: not checked against the file.
      project_id: Nullable(Uuid),
      project_key: Nullable(Text(512)),
      environment_id: Nullable(Uuid),
      environment_key: Nullable(Text(512)),
      timestamp: Timestamp,
      method: Text(16),
      path: Text(8192),
      query: Nullable(Text(8192)),
      status: Type.Integer({ minimum: 100, maximum: 599 }),
      success: Flag,
      duration_ms: Type.Number({ minimum: 0 }),
      client_ip: Text(64),
      request_id: Nullable(Text(128)),
      actor_type: Text(64),
      actor_id: Nullable(Text(255)),
      actor_display_name: Nullable(Text(1024)),
      request_body: Nullable(JsonText),
      response_body: Nullable(JsonText),
    }),
    json: { request_body: "text", response_body: "text" },
  },
  tasks: {
    columns: Type.Object({
      ...scoped,
      type: Text(64),
      params: JsonText,
      status: Text(32),
      result: Nullable(JsonText),
      error: Nullable(JsonText),
      progress: Count,
      attempts: Count,
      lease_owner: Nullable(Text(255)),
      lease_expires_at: Nullable(Timestamp),
      created_at: Timestamp,
      started_at: Nullable(Timestamp),
      finished_at: Nullable(Timestamp),
      updated_at: Timestamp,
    }),
    refs: SCOPED_REFS,
    json: { params: "object", result: "any", error: "any" },
  },
  decision_log_chunks: {
    columns: Type.Object({
      environment_id: Uuid,
      pdp_id: Nullable(Text(255)),
      first_id: Uuid,
      last_id: Uuid,
      count: Count,
      created_at: Timestamp,
      entries: JsonText,
    }),
    refs: { environment_id: "environments" },
    json: { entries: "text" },
    order: ["environment_id", "first_id", "last_id"],
  },
} satisfies Record<string, TableRules>;

export type TransferredTable = keyof typeof TABLE_RULES;

/** The columns a table's rows are ordered by in an export: its primary key (`id` unless it says otherwise). */
export const orderOf = (table: TransferredTable): string[] =>
  (TABLE_RULES[table] as TableRules).order ?? ["id"];

export const columnsOf = (table: TransferredTable): string[] =>
  Object.keys(TABLE_RULES[table].columns.properties);

/** Compiled once per process, with the API's validator settings (ajv, its formats, no coercion). */
let compiled: Map<TransferredTable, ValidateFunction> | undefined;

export function rowValidator(table: TransferredTable): ValidateFunction {
  if (!compiled) {
    const ajv = new Ajv({ coerceTypes: false, allErrors: false, strict: false });
    addFormats.default(ajv);
    compiled = new Map(
      (Object.keys(TABLE_RULES) as TransferredTable[]).map((t) => [
        t,
        ajv.compile({ ...TABLE_RULES[t].columns, additionalProperties: false }),
      ]),
    );
  }
  return compiled.get(table) as ValidateFunction;
}

export const refsOf = (table: TransferredTable): Record<string, keyof Database> =>
  (TABLE_RULES[table] as TableRules).refs ?? {};

export const jsonColumnsOf = (table: TransferredTable): Record<string, JsonKind> =>
  (TABLE_RULES[table] as TableRules).json ?? {};
