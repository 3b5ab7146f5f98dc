import { Type } from "typebox";
import { EnvParams } from "../../lib/schemas.ts";

export const SyncParams = EnvParams;

/**
 * The first line of the snapshot stream. The lines after it: `{"policy": {resources, roles, condition_sets,
 * condition_set_rules}}`, then pages of facts of one kind each (`{"users": [...]}`, `{"tenants": [...]}`,
 * `{"resource_instances": [...]}`, `{"role_assignments": [...]}`, `{"relationship_tuples": [...]}`, the PDP
 * engine's input, by keys), then `{"end": {"facts": n}}`; a stream without it was cut.
 */
export const SnapshotHeaderLine = Type.Object({
  format: Type.Literal("gatehouse-snapshot/ndjson-1"),
  environment_id: Type.String(),
  project_id: Type.String(),
  organization_id: Type.String(),
  revision: Type.Integer({ description: "every line is exactly at this revision" }),
});

export const ChangesQuery = Type.Object({
  after: Type.Integer({ minimum: 0, description: "the revision the caller holds" }),
  wait: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 30,
      default: 0,
      description: "seconds to wait for a newer revision",
    }),
  ),
});

export const ChangesResponse = Type.Object({
  revision: Type.Integer({ description: "the revision the caller holds after applying `changes`" }),
  head: Type.Integer({ description: "the environment's newest revision" }),
  changes: Type.Array(
    Type.Object({
      revision: Type.Integer(),
      seq: Type.Integer(),
      kind: Type.String(),
      op: Type.String(),
      data: Type.Unknown(),
      created_at: Type.String(),
    }),
  ),
});
