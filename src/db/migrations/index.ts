import type { Migration } from "kysely";
import * as m0001 from "./0001_foundation.ts";
import * as m0002 from "./0002_facts_and_schema.ts";
import * as m0004 from "./0004_facts_indexes.ts";
import * as m0005 from "./0005_api_log.ts";
import * as m0006 from "./0006_tasks.ts";
import * as m0007 from "./0007_decision_log.ts";
import * as m0008 from "./0008_decision_log_time_index.ts";
import * as m0009 from "./0009_decision_log_chunks.ts";
import * as m0010 from "./0010_role_assignment_expiry.ts";
import * as m0011 from "./0011_decision_log_pdp.ts";
import * as m0012 from "./0012_members.ts";
import * as m0013 from "./0013_list_counts.ts";
import * as m0014 from "./0014_built_in_resources.ts";
import * as m0015 from "./0015_proxy_configs.ts";
import * as m0017 from "./0017_tenant_members_index.ts";
import * as m0018 from "./0018_api_key_creator.ts";
import * as m0019 from "./0019_organization_moves.ts";
import * as m0020 from "./0020_webhooks.ts";
import * as m0021 from "./0021_sso_and_two_factor.ts";
import * as m0022 from "./0022_assignment_reference_triggers.ts";
import * as m0023 from "./0023_api_log_compressed_bodies.ts";
import * as m0024 from "./0024_change_retention.ts";
import * as m0025 from "./0025_webhook_cursors.ts";

/** Forward-only, applied in name order. Never edit a migration that has shipped: add the next one. */
export const migrations: Record<string, Migration> = {
  "0001_foundation": m0001,
  "0002_facts_and_schema": m0002,
  "0004_facts_indexes": m0004,
  "0005_api_log": m0005,
  "0006_tasks": m0006,
  "0007_decision_log": m0007,
  "0008_decision_log_time_index": m0008,
  "0009_decision_log_chunks": m0009,
  "0010_role_assignment_expiry": m0010,
  "0011_decision_log_pdp": m0011,
  "0012_members": m0012,
  "0013_list_counts": m0013,
  "0014_built_in_resources": m0014,
  "0015_proxy_configs": m0015,
  "0017_tenant_members_index": m0017,
  "0018_api_key_creator": m0018,
  "0019_organization_moves": m0019,
  "0020_webhooks": m0020,
  "0021_sso_and_two_factor": m0021,
  "0022_assignment_reference_triggers": m0022,
  "0023_api_log_compressed_bodies": m0023,
  "0024_change_retention": m0024,
  "0025_webhook_cursors": m0025,
};
