// Over 500 lines on purpose: every table's columns, as the migrations leave them, in the one Database type that
// Kysely checks each query against; a reader looks a table up here, in one place.
import type { Generated } from "kysely";

/**
 * Column conventions shared by both dialects: ids are UUID text, timestamps are ISO 8601 text with an offset,
 * JSON is text, booleans are 0/1 integers. One shape, so every query is the same on SQLite and PostgreSQL.
 */
export interface OrganizationsTable {
  id: string;
  key: string;
  name: string;
  settings: string | null;
  is_enterprise: number;
  created_at: string;
  updated_at: string;
  /** set while the organization moves between regions: its writes are refused (migration 0019) */
  frozen_at: string | null;
  /** when it was last exported, and the digest of what the export held (migration 0019) */
  exported_at: string | null;
  exported_digest: string | null;
}

export interface ProjectsTable {
  id: string;
  organization_id: string;
  key: string;
  name: string;
  description: string | null;
  urn_namespace: string | null;
  settings: string | null;
  active_policy_repo_id: string | null;
  created_at: string;
  updated_at: string;
}

export interface EnvironmentsTable {
  id: string;
  organization_id: string;
  project_id: string;
  key: string;
  name: string;
  description: string | null;
  custom_branch_name: string | null;
  avp_policy_store_id: string | null;
  jwks: string | null;
  settings: string | null;
  revision: number;
  /** The feed holds every change of the revisions after this one (older ones the retention purge removed). */
  changes_kept_after: Generated<number>;
  created_at: string;
  updated_at: string;
}

export interface ApiKeysTable {
  id: string;
  organization_id: string;
  project_id: string | null;
  environment_id: string | null;
  object_type: string;
  access_level: string;
  owner_type: string;
  name: string | null;
  secret_hash: string;
  secret_prefix: string;
  secret_sealed: string;
  created_at: string;
  last_used_at: string | null;
  /** the member whose session created the key (issue 19); null for keys created with a key */
  created_by_member_id: string | null;
  /** the key whose call created the key (migration 0018); null for keys made by a member, the CLI or the system */
  created_by_key_id: string | null;
}

export interface TenantsTable {
  id: string;
  organization_id: string;
  project_id: string;
  environment_id: string;
  key: string;
  name: string;
  description: string | null;
  attributes: string | null;
  created_at: string;
  updated_at: string;
  last_action_at: string;
}

export interface ChangesTable {
  environment_id: string;
  revision: number;
  seq: number;
  kind: string;
  op: string;
  data: string;
  created_at: string;
}

interface Scoped {
  id: string;
  organization_id: string;
  project_id: string;
  environment_id: string;
}

interface Stamped {
  created_at: string;
  updated_at: string;
}

export interface ResourcesTable extends Scoped, Stamped {
  key: string;
  name: string;
  description: string | null;
  urn: string | null;
  type_attributes: string | null;
  built_in: number;
}

export interface ResourceActionsTable extends Scoped, Stamped {
  resource_id: string;
  key: string;
  name: string;
  description: string | null;
  attributes: string | null;
}

export interface ResourceAttributesTable extends Scoped, Stamped {
  resource_id: string;
  key: string;
  type: string;
  description: string | null;
  built_in: number;
}

export interface ActionGroupsTable extends Scoped, Stamped {
  resource_id: string;
  key: string;
  name: string;
  description: string | null;
  attributes: string | null;
}

export interface ActionGroupActionsTable {
  environment_id: string;
  action_group_id: string;
  action_id: string;
}

export interface RolesTable extends Scoped, Stamped {
  /** null for tenant-level roles */
  resource_id: string | null;
  key: string;
  name: string;
  description: string | null;
  attributes: string | null;
  /** granted_to.when.no_direct_roles_on_object of the whole role */
  no_direct_roles_on_object: number;
}

export interface RolePermissionsTable {
  environment_id: string;
  role_id: string;
  action_id: string;
}

export interface RoleExtendsTable {
  environment_id: string;
  role_id: string;
  extends_role_id: string;
}

export interface RelationsTable extends Scoped, Stamped {
  object_resource_id: string;
  subject_resource_id: string;
  key: string;
  name: string;
  description: string | null;
}

export interface RoleDerivationsTable {
  id: string;
  environment_id: string;
  /** the derived role (on the relation's object resource) */
  role_id: string;
  /** the role the user holds on the subject instance */
  source_role_id: string;
  relation_id: string;
  no_direct_roles_on_object: number;
  created_at: string;
}

export interface UsersTable extends Scoped, Stamped {
  key: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  attributes: string | null;
}

export interface ResourceInstancesTable extends Scoped, Stamped {
  resource_id: string;
  tenant_id: string;
  key: string;
  attributes: string | null;
}

export interface RoleAssignmentsTable extends Scoped {
  user_id: string;
  role_id: string;
  tenant_id: string;
  resource_instance_id: string | null;
  created_at: string;
  /** When the assignment stops granting (ISO 8601, +00:00); null: never. */
  expires_at: string | null;
}

export interface RelationshipTuplesTable extends Scoped, Stamped {
  subject_id: string;
  relation_id: string;
  object_id: string;
  tenant_id: string;
}

export interface ConditionSetsTable extends Scoped, Stamped {
  key: string;
  type: string;
  autogenerated: number;
  resource_id: string | null;
  parent_id: string | null;
  name: string;
  description: string | null;
  conditions: string | null;
}

export interface ConditionSetRulesTable extends Scoped, Stamped {
  key: string;
  user_set_id: string;
  action_id: string;
  resource_set_id: string;
}

/** One external /v2 call; see migration 0005. */
export interface ApiLogTable {
  id: string;
  organization_id: string | null;
  project_id: string | null;
  project_key: string | null;
  environment_id: string | null;
  environment_key: string | null;
  timestamp: string;
  method: string;
  path: string;
  query: string | null;
  status: number;
  success: number;
  duration_ms: number;
  client_ip: string;
  request_id: string | null;
  actor_type: string;
  actor_id: string | null;
  actor_display_name: string | null;
  request_body: string | null;
  /** null when the body is kept compressed in `response_body_gzip` (migration 0023) */
  response_body: string | null;
  response_body_gzip: Uint8Array | null;
}

/**
 * Decisions of one environment, up to 1,000 to a row; see migrations 0009 and 0011. `entries` is the text of a
 * JSON array of `{id, ...DecisionRecord}` objects; `first_id` and `last_id` are their least and greatest ids
 * (UUIDv7, so they bound the chunk in time); `pdp_id` is the PDP that made them (null in chunks stored before 0011,
 * whose entries name it).
 */
export interface DecisionLogChunksTable {
  environment_id: string;
  pdp_id: string | null;
  first_id: string;
  last_id: string;
  count: number;
  created_at: string;
  entries: string;
}

/** A background task; see migration 0006. `params`, `result` and `error` are JSON. */
export interface TasksTable {
  id: string;
  organization_id: string;
  project_id: string;
  /** the environment the task belongs to (for a copy: the source) */
  environment_id: string;
  type: string;
  params: string;
  status: string;
  result: string | null;
  error: string | null;
  progress: number;
  attempts: number;
  lease_owner: string | null;
  lease_expires_at: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
}

/** Rows per environment of each counted list, kept by triggers (migration 0013). */
export interface ListCountsTable {
  environment_id: string;
  users: number;
  tenants: number;
  resource_instances: number;
  relationship_tuples: number;
  role_assignments: number;
  /** Grows with every insert or delete of any of the lists above. */
  version: number;
}

/** Permit's proxy configs with their URL mapping rules; see migration 0015. */
export interface ProxyConfigsTable extends Scoped, Stamped {
  key: string;
  name: string;
  /** JSON text, returned by reads as Permit does */
  secret: string;
  auth_mechanism: string;
  /** JSON array of mapping rules, by keys */
  mapping_rules: string;
}

export interface Database {
  organizations: OrganizationsTable;
  projects: ProjectsTable;
  environments: EnvironmentsTable;
  list_counts: ListCountsTable;
  api_keys: ApiKeysTable;
  tenants: TenantsTable;
  changes: ChangesTable;
  resources: ResourcesTable;
  resource_actions: ResourceActionsTable;
  resource_attributes: ResourceAttributesTable;
  action_groups: ActionGroupsTable;
  action_group_actions: ActionGroupActionsTable;
  roles: RolesTable;
  role_permissions: RolePermissionsTable;
  role_extends: RoleExtendsTable;
  relations: RelationsTable;
  role_derivations: RoleDerivationsTable;
  users: UsersTable;
  resource_instances: ResourceInstancesTable;
  role_assignments: RoleAssignmentsTable;
  relationship_tuples: RelationshipTuplesTable;
  condition_sets: ConditionSetsTable;
  condition_set_rules: ConditionSetRulesTable;
  proxy_configs: ProxyConfigsTable;
  api_log: ApiLogTable;
  tasks: TasksTable;
  decision_log_chunks: DecisionLogChunksTable;
  members: MembersTable;
  member_grants: MemberGrantsTable;
  sessions: SessionsTable;
  invites: InvitesTable;
  setup_tokens: SetupTokensTable;
  org_login_settings: OrgLoginSettingsTable;
  sso_logins: SsoLoginsTable;
  member_totp: MemberTotpTable;
  member_recovery_codes: MemberRecoveryCodesTable;
  webhook_subscriptions: WebhookSubscriptionsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_cursors: WebhookCursorsTable;
}

/** Webhook subscriptions (migration 0020): an organization's, or one environment's when environment_id is set. */
export interface WebhookSubscriptionsTable {
  id: string;
  organization_id: string;
  project_id: string | null;
  environment_id: string | null;
  url: string;
  description: string | null;
  /** JSON array of event types or patterns (`facts.*`) */
  events: string;
  secret_sealed: string;
  /** 1 or 0 */
  enabled: number;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
  /** its creation or last re-enabling: it sees the changes written after it (migration 0025) */
  active_since: string;
}

/**
 * Where a subscription stands in one environment's change feed (migration 0025): its deliveries cover every row up
 * to (revision, seq); `seq` is WHOLE_REVISION once the revision is covered whole.
 */
export interface WebhookCursorsTable {
  subscription_id: string;
  environment_id: string;
  revision: number;
  seq: number;
}

/** One event to send to one subscription; `status` is pending, delivered or failed (migration 0020). */
export interface WebhookDeliveriesTable {
  id: string;
  subscription_id: string;
  event_type: string;
  /** the body sent; empty when it is kept compressed in `payload_gzip` (migration 0025) */
  payload: string;
  payload_gzip: Uint8Array | null;
  status: string;
  attempts: number;
  next_attempt_at: string;
  lease_owner: string | null;
  lease_expires_at: string | null;
  last_attempt_at: string | null;
  last_status_code: number | null;
  last_latency_ms: number | null;
  last_response: string | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
}

/** People who log in (migration 0012). `email` is lower-cased; `password_hash` is Argon2id. */
export interface MembersTable {
  id: string;
  email: string;
  password_hash: string | null;
  first_name: string | null;
  last_name: string | null;
  settings: string | null;
  onboarding_step: string;
  created_at: string;
  updated_at: string;
  last_login: string | null;
  last_ip: string | null;
  logins_count: number;
}

/** What a member may do: an organization, project or environment, and an access level. */
export interface MemberGrantsTable {
  id: string;
  member_id: string;
  organization_id: string;
  project_id: string | null;
  environment_id: string | null;
  object_type: string;
  access_level: string;
  created_at: string;
}

/** A login: the token is known only to the browser (its SHA-256 is stored); `organization_id` is the active one. */
export interface SessionsTable {
  id: string;
  token_hash: string;
  member_id: string;
  organization_id: string | null;
  created_at: string;
  last_seen_at: string;
  idle_expires_at: string;
  expires_at: string;
  /** `password` or `sso` (migration 0021) */
  auth_method: Generated<string>;
}

export interface InvitesTable {
  id: string;
  organization_id: string;
  email: string;
  access_level: string;
  code_hash: string;
  code_sealed: string;
  status: string;
  failed_reason: string | null;
  member_id: string | null;
  created_by_member_id: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** The one-time setup links of the first start (the owner account). */
export interface SetupTokensTable {
  id: string;
  token_hash: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** An organization's login settings (migration 0021): its OpenID Connect provider, SSO and second-factor policy. */
export interface OrgLoginSettingsTable {
  organization_id: string;
  require_two_factor: number;
  require_sso: number;
  sso_provider_name: string | null;
  sso_issuer: string | null;
  sso_client_id: string | null;
  sso_client_secret_sealed: string | null;
  sso_allowed_domains: string | null;
  sso_new_member_access: string | null;
  break_glass_member_id: string | null;
  updated_at: string;
}

/** A sign-in with an OpenID provider under way: found by its state's SHA-256, used once. */
export interface SsoLoginsTable {
  id: string;
  state_hash: string;
  organization_id: string;
  nonce: string;
  code_verifier: string;
  next_path: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** A member's TOTP secret (sealed); a code is accepted once (`last_step`). */
export interface MemberTotpTable {
  member_id: string;
  secret_sealed: string;
  confirmed_at: string | null;
  last_step: number | null;
  created_at: string;
}

export interface MemberRecoveryCodesTable {
  id: string;
  member_id: string;
  code_hash: string;
  used_at: string | null;
}
