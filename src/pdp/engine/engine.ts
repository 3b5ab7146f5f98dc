// The decision engine: facts and schema in (createEngine, load, apply), decisions out. Pure: no I/O, no
// randomness; the same data, query and clock always give the same decision and reason. The clock is injected and
// read only while some role assignment has an expiry (see expiry.ts).

import { ConditionInput } from "./conditions.ts";
import { deny, explainMiss, NOT_ALLOWED, withExpiredGrants } from "./deny-reasons.ts";
import { DerivationSearch, NO_STATE } from "./derivation.ts";
import { ExpiringAssignments } from "./expiry.ts";
import { FactStore } from "./facts.ts";
import { planResources } from "./filter-plan.ts";
import { Interner } from "./interner.ts";
import { Journal, setEntry } from "./journal.ts";
import {
  authorizedUsers,
  roleAssignments,
  tenantDetails,
  userPermissions,
  userTenants,
  type EngineView,
  type LocalRoleAssignment,
  type RoleAssignmentFilter,
} from "./listings.ts";
import { compileSchema, hasPermission, SchemaStore, setRuleKey } from "./schema.ts";
import { matchUrl, type UrlMatch } from "./url-mapping.ts";
import {
  resourcesPage,
  subjectsPage,
  walkAt,
  type ListAnswer,
  type ListRequest,
  type ResourceListQuery,
  type SubjectListQuery,
  type WalkPage,
  type WalkPosition,
} from "./walks.ts";
import {
  searchActions,
  searchResources,
  searchSubjects,
  type ActionSearchQuery,
  type ResourceSearchQuery,
  type SearchDeps,
  type SubjectSearchQuery,
} from "./search.ts";
import type {
  AllowedTenant,
  AuthorizedUsers,
  AuthorizedUsersQuery,
  Change,
  CheckQuery,
  Decision,
  EnvironmentData,
  MappingRuleData,
  QueryResource,
  ResourcePlan,
  ResourcePlanQuery,
  TenantDetails,
  UserPermissions,
  UserPermissionsQuery,
} from "./types.ts";

/** The tenant Permit's SDK sends when the caller names none. */
export const DEFAULT_TENANT = "default";

export interface Engine {
  /** Applies one change to the indexes; deletes cascade like the API's. */
  apply(change: Change): void;
  applyAll(changes: Iterable<Change>): void;
  /** Replaces everything the engine holds with `data`. */
  load(data: EnvironmentData): void;
  /**
   * Adds one page of a snapshot (any parts of `EnvironmentData`) to what the engine holds, so that a large
   * environment is built without its whole input in memory: `load` is an empty engine and one page.
   */
  loadPage(page: EnvironmentData): void;
  check(query: CheckQuery): Decision;
  bulkCheck(queries: readonly CheckQuery[]): Decision[];
  userPermissions(query: UserPermissionsQuery): UserPermissions;
  /** The tenants in which the check is allowed, each with the reason. */
  allTenants(query: CheckQuery): AllowedTenant[];
  authorizedUsers(query: AuthorizedUsersQuery): AuthorizedUsers;
  /** Tenants in which the user holds any role (tenant or instance level). */
  userTenants(userKey: string): TenantDetails[];
  /** The mapping rule of the proxy configs held that a request's method and URL match (Permit's `/allowed_url`). */
  mapUrl(method: string, url: string): UrlMatch | undefined;
  /** A page of the role assignments held that match the filter (Permit's local API): users in the PDP's order. */
  roleAssignments(filter: RoleAssignmentFilter, skip: number, take: number): LocalRoleAssignment[];
  /** Searches (search.ts): user keys, instance keys of a type, action keys; each sorted and checked. */
  searchSubjects(query: SubjectSearchQuery): string[];
  searchResources(query: ResourceSearchQuery): string[];
  searchActions(query: ActionSearchQuery): string[];
  /** A filter plan (filter-plan.ts): the instances of a type the check allows, as a condition on their fields. */
  planResources(query: ResourcePlanQuery): ResourcePlan;
  /** The state now is the feed's `revision`: walks (walks.ts) answer at their first page's (journal.ts). */
  markRevision(revision: number): void;
  keepHistory(writes: number): void; // writes kept for walks at older revisions (DEFAULT_LISTING_HISTORY)
  /** A page of the instances of a type the user may act on (`{gone: true}`: the cursor's revision is gone). */
  listResources(query: ResourceListQuery, request: ListRequest): ListAnswer<{ key: string; tenant: string }>;
  /** A page of the users who may act on the resource. */
  listSubjects(query: SubjectListQuery, request: ListRequest): ListAnswer<string>;
}

export interface EngineOptions {
  /** The decisions' clock in ms since the epoch (default Date.now): assignments stop granting at their expiry. */
  clock?: () => number;
}

export const DEFAULT_LISTING_HISTORY = 100_000;

export function createEngine(data?: EnvironmentData, options: EngineOptions = {}): Engine {
  const engine = new DecisionEngine(options.clock ?? Date.now, DEFAULT_LISTING_HISTORY);
  if (data !== undefined) engine.load(data);
  return engine;
}

type Resolved = {
  permission: number;
  instance: number;
  tenant: number | undefined;
  tenantKey: string;
  /** "type:key" of a named instance the engine does not hold (then `instance` is -1). */
  missingInstance?: string;
};

class DecisionEngine implements Engine {
  private facts = new FactStore();
  private schemaStore = new SchemaStore();
  private permissionIds = new Interner();
  /** Compiled schema and its derivation search; undefined after a schema change until the next decision. */
  private compiled: EngineView | undefined;
  private readonly conditionInput = new ConditionInput();
  private expiries = new ExpiringAssignments();
  /** proxy config key -> its mapping rules */
  private proxyConfigs = new Map<string, MappingRuleData[]>();

  private journal: Journal;

  constructor(
    private readonly clock: () => number,
    private history: number,
  ) {
    this.journal = new Journal(history);
  }

  /**
   * Drops the assignments whose expiry has come: one comparison when none is pending. Expiry is time, not a
   * revision: older revisions are then forgotten, and a walk that would go back across it gets 410.
   */
  private expireDue(): void {
    const expiries = this.expiries;
    if (expiries.next === Infinity || this.clock() < expiries.next) return;
    this.journal.record(() => expiries.expireDue(this.facts, this.clock));
    this.journal.reset();
  }

  private view(): EngineView {
    if (this.compiled === undefined) {
      const schema = compileSchema(this.schemaStore, this.facts, this.permissionIds);
      this.compiled = { facts: this.facts, schema, search: new DerivationSearch(this.facts, schema) };
    }
    return this.compiled;
  }

  private schemaChanged(): void {
    this.compiled = undefined;
  }

  load(data: EnvironmentData): void {
    this.facts = new FactStore();
    this.schemaStore = new SchemaStore();
    this.permissionIds = new Interner();
    this.expiries = new ExpiringAssignments();
    this.proxyConfigs = new Map();
    this.journal = new Journal(this.history);
    this.schemaChanged();
    this.loadPage(data);
  }

  loadPage(data: EnvironmentData): void {
    this.journal.record(() => this.loadPageNow(data));
  }

  private loadPageNow(data: EnvironmentData): void {
    // Schema first, then facts in dependency order, exactly as incremental upserts would arrive. Pages may come in
    // any order: an instance's own page sets its tenant over one a tuple or an assignment created it with.
    for (const resource of data.resources ?? [])
      this.apply({ kind: "resource", op: "upsert", data: resource });
    for (const role of data.roles ?? []) this.apply({ kind: "role", op: "upsert", data: role });
    for (const set of data.condition_sets ?? [])
      this.apply({ kind: "condition_set", op: "upsert", data: set });
    for (const rule of data.condition_set_rules ?? []) {
      this.apply({ kind: "condition_set_rule", op: "upsert", data: rule });
    }
    for (const config of data.proxy_configs ?? []) this.proxyConfigs.set(config.key, config.mapping_rules);
    for (const tenant of data.tenants ?? []) this.facts.upsertTenant(tenant);
    for (const user of data.users ?? []) this.facts.upsertUser(user);
    for (const instance of data.resource_instances ?? []) this.facts.upsertInstance(instance);
    for (const tuple of data.relationship_tuples ?? []) this.facts.upsertTuple(tuple);
    for (const assignment of data.role_assignments ?? []) {
      this.facts.upsertAssignment(assignment);
      if (assignment.expires_at) this.expiries.record("upsert", assignment);
    }
  }

  applyAll(changes: Iterable<Change>): void {
    this.journal.record(() => {
      for (const change of changes) this.applyNow(change);
    });
  }

  apply(change: Change): void {
    this.journal.record(() => this.applyNow(change));
  }

  private applyNow(change: Change): void {
    const { facts, schemaStore } = this;
    this.expiries.follow(change);
    switch (change.kind) {
      case "resource": {
        const key = change.data.key;
        if (change.op === "upsert") {
          const removedRoles = Object.keys(schemaStore.resources.get(key)?.roles ?? {}).filter(
            (role) => !Object.hasOwn(change.data.roles ?? {}, role),
          );
          for (const role of removedRoles) facts.deleteResourceRoleAssignments(key, role);
          setEntry(schemaStore.resources, key, change.data);
        } else {
          facts.deleteInstancesOfType(key);
          schemaStore.deleteResource(key);
        }
        return this.schemaChanged();
      }
      case "role":
        if (change.op === "upsert") {
          setEntry(schemaStore.tenantRoles, change.data.key, change.data);
        } else {
          facts.deleteTenantRoleAssignments(change.data.key);
          schemaStore.deleteTenantRole(change.data.key);
        }
        return this.schemaChanged();
      case "condition_set":
        if (change.op === "upsert") setEntry(schemaStore.conditionSets, change.data.key, change.data);
        else schemaStore.deleteConditionSet(change.data.key);
        return this.schemaChanged();
      case "condition_set_rule":
        if (change.op === "upsert") setEntry(schemaStore.setRules, setRuleKey(change.data), change.data);
        else setEntry(schemaStore.setRules, setRuleKey(change.data), undefined);
        return this.schemaChanged();
      case "proxy_config":
        if (change.op === "upsert") this.proxyConfigs.set(change.data.key, change.data.mapping_rules);
        else this.proxyConfigs.delete(change.data.key);
        return;
      case "user":
        return change.op === "upsert" ? facts.upsertUser(change.data) : facts.deleteUser(change.data.key);
      case "tenant":
        return change.op === "upsert" ? facts.upsertTenant(change.data) : facts.deleteTenant(change.data.key);
      case "role_assignment":
        return change.op === "upsert"
          ? facts.upsertAssignment(change.data)
          : facts.deleteAssignment(change.data);
      case "resource_instance":
        return change.op === "upsert"
          ? facts.upsertInstance(change.data)
          : facts.deleteInstance(change.data.resource, change.data.key);
      case "relationship_tuple":
        return change.op === "upsert" ? facts.upsertTuple(change.data) : facts.deleteTuple(change.data);
    }
  }

  /** Resolves type, action, instance and tenant; returns a deny decision when one of them is wrong. */
  private resolve(resource: QueryResource, action: string): Resolved | Decision {
    const { facts, schema } = this.view();
    const type = facts.types.get(resource.type);
    const actions = type === undefined ? undefined : schema.actionPermissions[type];
    if (type === undefined || actions === undefined) {
      return deny("UNKNOWN_RESOURCE_TYPE", `resource type '${resource.type}' is not defined`);
    }
    const permission = actions.get(action);
    if (permission === undefined) {
      return deny("UNKNOWN_ACTION", `action '${action}' is not defined on resource type '${resource.type}'`);
    }
    if (!resource.key) {
      const tenantKey = resource.tenant || DEFAULT_TENANT;
      return { permission, instance: -1, tenant: facts.tenants.get(tenantKey), tenantKey };
    }
    const instance = facts.instanceId(type, resource.key);
    if (instance === undefined) {
      // Only ReBAC needs the instance. Tenant roles and condition-set rules decide in the tenant the request names,
      // as Permit does, so apps may check on their own object ids without syncing every object first.
      const tenantKey = resource.tenant || DEFAULT_TENANT;
      return {
        permission,
        instance: -1,
        tenant: facts.tenants.get(tenantKey),
        tenantKey,
        missingInstance: `${resource.type}:${resource.key}`,
      };
    }
    const tenant = facts.instanceTenant[instance] as number;
    const tenantKey = facts.tenants.keyOf(tenant);
    const requested = resource.tenant;
    // The SDK fills in "default" when the caller gave no tenant, so "default" cannot contradict the instance.
    if (requested && requested !== DEFAULT_TENANT && requested !== tenantKey) {
      return deny(
        "TENANT_MISMATCH",
        `resource instance '${resource.type}:${resource.key}' belongs to tenant '${tenantKey}', not '${requested}'`,
      );
    }
    return { permission, instance, tenant, tenantKey };
  }

  check(query: CheckQuery): Decision {
    this.expireDue();
    const resolved = this.resolve(query.resource, query.action);
    if ("allow" in resolved) return resolved;
    const decision = this.decide(query, resolved);
    if (decision.allow || !this.expiries.anyEnded()) return decision;
    const expired = this.journal.record(() =>
      this.expiries.expiredGrantsAllowing(
        this.facts,
        query.user.key,
        () => this.decide(query, resolved).allow,
      ),
    );
    return expired.length === 0 ? decision : withExpiredGrants(decision, expired);
  }

  bulkCheck(queries: readonly CheckQuery[]): Decision[] {
    return queries.map((query) => this.check(query));
  }

  /** RBAC, then ReBAC, then ABAC: cheapest first, first grant wins. */
  private decide(query: CheckQuery, target: Resolved, explain = true): Decision {
    const { facts, schema, search } = this.view();
    const { permission, instance, tenant, tenantKey } = target;
    const user = facts.users.get(query.user.key);
    if (user !== undefined && tenant !== undefined) {
      const assigned = facts.userTenantRoles[user];
      if (assigned !== undefined) {
        for (let i = 0; i < assigned.length; i += 2) {
          const role = assigned[i + 1] as number;
          if (assigned[i] === tenant && hasPermission(schema.rolePermissionBits[role], permission)) {
            return { allow: true, reason: { kind: "rbac", role: facts.roleKey(role), tenant: tenantKey } };
          }
        }
      }
      if (instance >= 0) {
        const start = search.startState(permission);
        if (start !== NO_STATE && search.holds(user, instance, tenant, start)) {
          const { role, via } = search.explainGrant(user, tenant);
          const instanceName = facts.instanceName(instance);
          return {
            allow: true,
            reason: {
              kind: "rebac",
              role: facts.roleKey(role),
              instance: instanceName,
              tenant: tenantKey,
              via,
            },
          };
        }
      }
    }
    const rules = schema.abacRules[permission];
    if (rules !== undefined) {
      const input = this.conditionInput;
      input.userKey = query.user.key;
      input.userRequest = query.user;
      input.userStored = user === undefined ? undefined : facts.userProfiles[user];
      input.setResource(
        query.resource,
        tenantKey,
        instance >= 0 ? facts.instanceAttributes[instance] : undefined,
      );
      input.context = query.context;
      for (const rule of rules) {
        if (rule.matchesUser(input) && rule.matchesResource(input)) {
          return {
            allow: true,
            reason: { kind: "abac", user_set: rule.userSet, resource_set: rule.resourceSet },
          };
        }
      }
    }
    if (!explain) return NOT_ALLOWED;
    return explainMiss(facts, schema, search, { userKey: query.user.key, user, ...target });
  }

  allTenants(query: CheckQuery): AllowedTenant[] {
    this.expireDue();
    const resolved = this.resolve(query.resource, query.action);
    if ("allow" in resolved) return [];
    const { facts, schema } = this.view();
    let candidates: number[];
    if (resolved.instance >= 0) {
      candidates = [resolved.tenant as number];
    } else if (schema.abacRules[resolved.permission] !== undefined) {
      // Attribute rules are not tied to a tenant: any tenant may allow.
      candidates = facts.tenants.keys.map((_, id) => id);
    } else {
      const user = facts.users.get(query.user.key);
      const assigned = (user === undefined ? undefined : facts.userTenantRoles[user]) ?? [];
      candidates = [...new Set(assigned.filter((_, i) => i % 2 === 0))];
    }
    const allowed: AllowedTenant[] = [];
    for (const tenant of candidates) {
      if (!facts.tenantExists(tenant)) continue;
      const decision = this.decide(query, { ...resolved, tenant, tenantKey: facts.tenants.keyOf(tenant) });
      if (decision.allow) allowed.push({ tenant: tenantDetails(facts, tenant), reason: decision.reason });
    }
    return allowed.sort((a, b) => (a.tenant.key < b.tenant.key ? -1 : a.tenant.key > b.tenant.key ? 1 : 0));
  }

  userPermissions(query: UserPermissionsQuery): UserPermissions {
    this.expireDue();
    return userPermissions(this.view(), query);
  }

  authorizedUsers(query: AuthorizedUsersQuery): AuthorizedUsers {
    this.expireDue();
    const resource = query.resource;
    const resourceName = `${resource.type}:${resource.key || "*"}`;
    const resolved = this.resolve(resource, query.action);
    if ("allow" in resolved)
      return { resource: resourceName, tenant: resource.tenant || DEFAULT_TENANT, users: {} };
    return authorizedUsers(this.view(), resourceName, { ...resolved, resource, context: query.context });
  }

  userTenants(userKey: string): TenantDetails[] {
    this.expireDue();
    return userTenants(this.view(), userKey);
  }

  mapUrl(method: string, url: string): UrlMatch | undefined {
    return matchUrl([...this.proxyConfigs.values()].flat(), method, url);
  }

  roleAssignments(filter: RoleAssignmentFilter, skip: number, take: number): LocalRoleAssignment[] {
    this.expireDue();
    return roleAssignments(this.view(), filter, skip, take);
  }

  private readonly searchDeps: SearchDeps = {
    check: (query) => this.check(query),
    authorizedUsers: (query) => this.authorizedUsers(query),
  };

  searchSubjects(query: SubjectSearchQuery): string[] {
    this.expireDue();
    return searchSubjects(this.view(), this.searchDeps, query);
  }

  searchResources(query: ResourceSearchQuery): string[] {
    this.expireDue();
    return searchResources(this.view(), this.searchDeps, query);
  }

  searchActions(query: ActionSearchQuery): string[] {
    this.expireDue();
    return searchActions(this.view(), this.searchDeps, query);
  }

  planResources(query: ResourcePlanQuery): ResourcePlan {
    this.expireDue();
    const tenant = query.resource.tenant;
    return planResources(this.view(), query, tenant && tenant !== DEFAULT_TENANT ? tenant : undefined);
  }

  markRevision = (revision: number): void => this.journal.mark(revision);
  keepHistory = (writes: number): void => void (this.journal.limit = this.history = writes);

  listResources(query: ResourceListQuery, request: ListRequest): ListAnswer<{ key: string; tenant: string }> {
    this.expireDue();
    const tenant = query.tenant && query.tenant !== DEFAULT_TENANT ? query.tenant : undefined;
    const decide = this.allows(query.action, query.context);
    const page = (position: WalkPosition) =>
      resourcesPage(this.view(), decide, { ...query, tenant }, request.size, position);
    return walkAt(this.journal, request, page, () => this.schemaChanged());
  }

  listSubjects(query: SubjectListQuery, request: ListRequest): ListAnswer<string> {
    this.expireDue();
    const decide = this.allows(query.action, query.context);
    const page = (position: WalkPosition): WalkPage<string> => {
      const target = this.resolve(query.resource, query.action);
      return "allow" in target
        ? { items: [] }
        : subjectsPage(this.view(), decide, query, target, request.size, position);
    };
    return walkAt(this.journal, request, page, () => this.schemaChanged());
  }

  /** The check without its side effects, for walks: expiry handled before, no deny reason built. */
  private allows(action: string, context: CheckQuery["context"]) {
    return (user: CheckQuery["user"], resource: CheckQuery["resource"], target: Resolved) =>
      this.decide({ user, action, resource, ...(context && { context }) }, target, false).allow;
  }
}
