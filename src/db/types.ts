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

export interface Database {
  organizations: OrganizationsTable;
  projects: ProjectsTable;
  environments: EnvironmentsTable;
  api_keys: ApiKeysTable;
  tenants: TenantsTable;
  changes: ChangesTable;
}

export type { Generated };
