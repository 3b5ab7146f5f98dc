// The engine's input and output model. Field names follow Permit's API (snake_case where the API uses it) and
// every reference is a KEY, never a uuid: the engine never sees database ids.

/** Free-form JSON attributes, as stored on users, tenants and resource instances. */
export type Attributes = Record<string, unknown>;

export interface DerivationSettings {
  no_direct_roles_on_object?: boolean;
}

/** "Users with role `role` on a `on_resource` instance linked to this one by `linked_by_relation` get this role." */
export interface DerivationRuleData {
  role: string;
  on_resource: string;
  linked_by_relation: string;
  when?: DerivationSettings;
}

export interface GrantedToData {
  when?: DerivationSettings;
  users_with_role?: DerivationRuleData[];
}

export interface ResourceRoleData {
  /** Bare action keys (or action group keys) of the role's resource. */
  permissions?: string[];
  /** Keys of other roles of the same resource whose permissions this role inherits. */
  extends?: string[];
  granted_to?: GrantedToData;
}

export interface AttributeSchemaData {
  type: string;
  description?: string;
}

export interface ResourceData {
  key: string;
  actions: string[];
  /** Attribute declarations; the engine evaluates conditions on any attribute, declared or not. */
  attributes?: Record<string, AttributeSchemaData>;
  /** Group key -> action keys. A permission naming a group grants all of its actions. */
  action_groups?: Record<string, string[]>;
  roles?: Record<string, ResourceRoleData>;
  /** Relation key -> subject resource key (the resource on the other end of the tuple). */
  relations?: Record<string, string>;
}

/** A tenant-level role. */
export interface TenantRoleData {
  key: string;
  /** "resource:action" (or "resource:actionGroup") strings. */
  permissions?: string[];
  extends?: string[];
}

export interface UserData {
  key: string;
  email?: string | null;
  first_name?: string | null;
  last_name?: string | null;
  attributes?: Attributes | null;
}

export interface TenantData {
  key: string;
  attributes?: Attributes | null;
}

export interface RoleAssignmentData {
  user: string;
  role: string;
  tenant: string;
  /** "type:key" for a resource-instance role; absent or null for a tenant role. */
  resource_instance?: string | null;
  /** ISO 8601 instant at which the assignment stops granting; absent or null: it never does. */
  expires_at?: string | null;
}

export interface ResourceInstanceData {
  resource: string;
  key: string;
  tenant: string;
  attributes?: Attributes | null;
}

export interface RelationshipTupleData {
  /** "type:key" */
  subject: string;
  relation: string;
  /** "type:key" */
  object: string;
  tenant: string;
}

export type ConditionSetType = "userset" | "resourceset";

export interface ConditionSetData {
  key: string;
  type: ConditionSetType;
  /** The resource key a resourceset is bound to; a rule naming another resource does not use the set. */
  resource?: string | null;
  /** Permit's condition document, e.g. {"allOf": [{"user.age": {"greater-than": 18}}]}. */
  conditions: unknown;
}

export interface ConditionSetRuleData {
  user_set: string;
  /** "resource:action" (or "resource:actionGroup") */
  permission: string;
  resource_set: string;
}

/** Permit's URL mapping rule (a proxy config's): a request's method and URL name a resource type and an action. */
export interface MappingRuleData {
  /** An absolute URL whose path segments and query values may be `{placeholders}`, or a regex (`url_type`). */
  url: string;
  /** lower case */
  http_method: string;
  resource: string;
  action: string;
  /** The highest priority wins among the rules that match (absent: 0). */
  priority?: number | null;
  url_type?: "regex" | null;
}

export interface ProxyConfigData {
  key: string;
  mapping_rules: MappingRuleData[];
}

/** A whole environment, as loaded into the engine. Every list is optional so partial snapshots are easy to write. */
export interface EnvironmentData {
  resources?: ResourceData[];
  roles?: TenantRoleData[];
  users?: UserData[];
  tenants?: TenantData[];
  role_assignments?: RoleAssignmentData[];
  resource_instances?: ResourceInstanceData[];
  relationship_tuples?: RelationshipTupleData[];
  condition_sets?: ConditionSetData[];
  condition_set_rules?: ConditionSetRuleData[];
  proxy_configs?: ProxyConfigData[];
}

export interface KeyRef {
  key: string;
}

export interface ResourceInstanceRef {
  resource: string;
  key: string;
}

export interface RelationshipTupleRef {
  subject: string;
  relation: string;
  object: string;
}

/**
 * One incremental change. Upserts carry the whole object (a resource upsert replaces its actions, groups, roles
 * and relations). Deletes cascade inside the engine the way the API cascades them (docs/api.md).
 */
/** A change to an object named by its key: its new data, or its key when it is deleted. */
type KeyedChange<K extends string, D> =
  { kind: K; op: "upsert"; data: D } | { kind: K; op: "delete"; data: KeyRef };

export type Change =
  | KeyedChange<"resource", ResourceData>
  | KeyedChange<"role", TenantRoleData>
  | KeyedChange<"user", UserData>
  | KeyedChange<"tenant", TenantData>
  | { kind: "role_assignment"; op: "upsert" | "delete"; data: RoleAssignmentData }
  | { kind: "resource_instance"; op: "upsert"; data: ResourceInstanceData }
  | { kind: "resource_instance"; op: "delete"; data: ResourceInstanceRef }
  | { kind: "relationship_tuple"; op: "upsert"; data: RelationshipTupleData }
  | { kind: "relationship_tuple"; op: "delete"; data: RelationshipTupleRef }
  | KeyedChange<"condition_set", ConditionSetData>
  | { kind: "condition_set_rule"; op: "upsert" | "delete"; data: ConditionSetRuleData }
  | KeyedChange<"proxy_config", ProxyConfigData>;

// ---- Queries ----

/** The user of a query. Extra fields (a full UserRead) are allowed and ignored. */
export interface QueryUser {
  key: string;
  email?: string;
  first_name?: string;
  last_name?: string;
  attributes?: Attributes;
}

export interface QueryResource {
  type: string;
  key?: string;
  tenant?: string;
  attributes?: Attributes;
}

export interface CheckQuery {
  user: QueryUser;
  action: string;
  resource: QueryResource;
  context?: Attributes;
}

/** One step of a ReBAC derivation: the user holds `role` on `instance`, which is linked to the next step by `relation`. */
export interface DerivationHop {
  role: string;
  instance: string;
  relation: string;
}

export type AllowReason =
  | { kind: "rbac"; role: string; tenant: string }
  | { kind: "rebac"; role: string; instance: string; tenant: string; via: DerivationHop[] }
  | { kind: "abac"; user_set: string; resource_set: string };

export type DenyCode =
  | "UNKNOWN_RESOURCE_TYPE"
  | "UNKNOWN_ACTION"
  | "UNKNOWN_INSTANCE"
  | "TENANT_MISMATCH"
  | "UNKNOWN_USER"
  | "UNKNOWN_TENANT"
  | "NO_ROLE_IN_TENANT"
  | "NO_PERMISSION"
  | "NO_MAPPING_RULE";

/** A role assignment that would have granted the check had it not expired. */
export interface ExpiredGrant {
  role: string;
  tenant: string;
  /** "type:key", for an instance role */
  resource_instance?: string;
  expired_at: string;
}

export interface DenyReason {
  kind: "deny";
  code: DenyCode;
  message: string;
  /** Present when grants that expired would have allowed the check. */
  expired?: ExpiredGrant[];
}

export type Reason = AllowReason | DenyReason;

export type Decision = { allow: true; reason: AllowReason } | { allow: false; reason: DenyReason };

export interface UserPermissionsQuery {
  user: QueryUser;
  tenants?: string[];
  /** "type:key" instance names */
  resources?: string[];
  /** resource type keys; "__tenant" selects the tenant entries */
  resource_types?: string[];
  /** what condition-set rules see as `context` */
  context?: Attributes;
}

export interface TenantDetails {
  key: string;
  attributes: Attributes;
}

export interface ResourceDetails {
  key: string;
  type: string;
  attributes: Attributes;
}

export interface PermissionsEntry {
  permissions: string[];
  roles: string[];
  tenant?: TenantDetails;
  resource?: ResourceDetails;
}

/** Keyed by "__tenant:<tenant>" and "<type>:<key>", as Permit's /user-permissions returns it. */
export type UserPermissions = Record<string, PermissionsEntry>;

export interface AuthorizedUsersQuery {
  action: string;
  resource: QueryResource;
  context?: Attributes;
}

export interface AuthorizedUserAssignment {
  user: string;
  tenant: string;
  /** "__tenant:<t>" for a tenant role, "type:key" for an instance role */
  resource: string;
  role: string;
}

export interface AuthorizedUsers {
  /** "type:key", or "type:*" when the query names no instance */
  resource: string;
  tenant: string;
  users: Record<string, AuthorizedUserAssignment[]>;
}

export interface AllowedTenant {
  tenant: TenantDetails;
  reason: AllowReason;
}

// ---- Filter plans (filter-plan.ts, docs/data-filtering.md) ----

/** Comparisons of a plan: Permit's condition operators under short names, with the same semantics. */
export type PlanComparison =
  | "eq"
  | "ne"
  | "lt"
  | "le"
  | "gt"
  | "ge"
  | "in"
  | "not_in"
  | "contains"
  | "not_contains"
  | "starts_with"
  | "ends_with"
  | "array_contains"
  | "array_subset"
  | "array_superset"
  | "array_intersect";

/**
 * An expression over one resource's fields: `key`, `tenant`, or an attribute (`status`, `owner.id`). A comparison
 * is false when the field is missing (the negative ones too); `not` is plain negation.
 */
export type PlanExpression =
  | { operator: "and" | "or"; operands: PlanExpression[] }
  | { operator: "not"; operands: [PlanExpression] }
  | { operator: PlanComparison; field: string; value: unknown };

/** Which instances of `resource.type` may the user perform `action` on? `resource.tenant` narrows to one tenant. */
export interface ResourcePlanQuery {
  user: QueryUser;
  action: string;
  resource: { type: string; tenant?: string };
  context?: Attributes;
}

export interface ResourcePlan {
  kind: "always_allowed" | "always_denied" | "conditional";
  /** Present when `kind` is "conditional". */
  condition?: PlanExpression;
  /** How many instance keys the condition lists (in `key` comparisons), so an adapter can choose how to send them. */
  key_count: number;
}

/** A resource as a plan reads it: what a row of the app's table holds. */
export interface PlanResource {
  key: string;
  tenant: string;
  attributes?: Attributes;
}
