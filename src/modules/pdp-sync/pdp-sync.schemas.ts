import { Type } from "typebox";
import { EnvParams } from "../../lib/schemas.ts";

export const SyncParams = EnvParams;

export const SnapshotResponse = Type.Object({
  environment_id: Type.String(),
  project_id: Type.String(),
  organization_id: Type.String(),
  revision: Type.Integer(),
  data: Type.Unknown({
    description: "the environment's policy and facts, keyed by keys (the PDP engine's input)",
  }),
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
