import { Type, type TSchema } from "typebox";
import { EnvParams } from "../../lib/schemas.ts";

const Key = Type.String({ minLength: 1, maxLength: 255 });
const Attributes = Type.Record(Type.String(), Type.Unknown());

/** As the PDP takes them: a user by key or as an object, a resource as "type", "type:key" or an object. */
const CheckUser = Type.Union([
  Key,
  Type.Object(
    {
      key: Key,
      email: Type.Optional(Type.String({ maxLength: 320 })),
      first_name: Type.Optional(Type.String({ maxLength: 255 })),
      last_name: Type.Optional(Type.String({ maxLength: 255 })),
      attributes: Type.Optional(Attributes),
    },
    { additionalProperties: true },
  ),
]);

const CheckResource = Type.Union([
  Type.String({ minLength: 1, maxLength: 511 }),
  Type.Object(
    {
      type: Key,
      key: Type.Optional(Type.String({ maxLength: 255 })),
      tenant: Type.Optional(Type.String({ maxLength: 255 })),
      attributes: Type.Optional(Attributes),
    },
    { additionalProperties: true },
  ),
]);

export const CheckRequest = Type.Object({
  user: CheckUser,
  action: Key,
  resource: CheckResource,
  context: Type.Optional(Attributes),
});

export const BulkCheckRequest = Type.Array(CheckRequest, { maxItems: 1000 });

const KeyList = Type.Array(Type.String({ maxLength: 511 }), { maxItems: 1000 });

export const UserPermissionsRequest = Type.Object({
  user: CheckUser,
  tenants: Type.Optional(KeyList),
  resources: Type.Optional(KeyList),
  resource_types: Type.Optional(KeyList),
  context: Type.Optional(Attributes),
});

const DerivationHop = Type.Object({
  role: Type.String({ description: "the role held on `instance`" }),
  instance: Type.String({ description: "type:key" }),
  relation: Type.String({ description: "the relation linking `instance` to the next step" }),
});

/** The engine's reason: the grant path of an allow, the closest miss of a deny. */
export const Reason = Type.Union([
  Type.Object({ kind: Type.Literal("rbac"), role: Type.String(), tenant: Type.String() }),
  Type.Object({
    kind: Type.Literal("rebac"),
    role: Type.String(),
    instance: Type.String(),
    tenant: Type.String(),
    via: Type.Array(DerivationHop, { description: "each hop of the derivation, from the held role" }),
  }),
  Type.Object({ kind: Type.Literal("abac"), user_set: Type.String(), resource_set: Type.String() }),
  Type.Object({
    kind: Type.Literal("deny"),
    code: Type.String(),
    message: Type.String({ description: "the closest miss" }),
    expired: Type.Optional(
      Type.Array(
        Type.Object({
          role: Type.String(),
          tenant: Type.String(),
          resource_instance: Type.Optional(Type.String()),
          expired_at: Type.String(),
        }),
      ),
    ),
  }),
]);

export const CheckResult = Type.Object({
  allow: Type.Boolean(),
  result: Type.Boolean({ description: "the same as allow, for older SDKs" }),
  debug: Type.Object({ reason: Reason, revision: Type.Integer() }),
  reason: Reason,
  explanation: Type.String({ description: "the reason as one line a person can read" }),
  revision: Type.Integer({ description: "the environment revision the PDP decided at" }),
});

export const BulkCheckResult = Type.Object({ allow: Type.Array(CheckResult) });

const PermissionsByResource = Type.Record(
  Type.String(),
  Type.Object({
    permissions: Type.Array(Type.String()),
    roles: Type.Array(Type.String()),
    tenant: Type.Optional(Type.Object({ key: Type.String(), attributes: Attributes })),
    resource: Type.Optional(Type.Object({ key: Type.String(), type: Type.String(), attributes: Attributes })),
  }),
  { description: "keyed by __tenant:<tenant> and <type>:<key>, as the PDP's /user-permissions" },
);

export const UserPermissionsResult = Type.Object({
  permissions: PermissionsByResource,
  revision: Type.Integer({ description: "the environment revision the PDP answered at" }),
});

export const PlanRequest = Type.Object({
  user: CheckUser,
  action: Key,
  resource: Type.Union([
    Key,
    Type.Object(
      {
        type: Key,
        tenant: Type.Optional(Type.String({ maxLength: 255, description: "only this tenant's instances" })),
      },
      { additionalProperties: false },
    ),
  ]),
  context: Type.Optional(Attributes),
});

const PlanExpression = Type.Unsafe<Record<string, unknown>>({
  type: "object",
  description:
    "{operator: and|or|not, operands: [...]} or {operator: eq|ne|lt|le|gt|ge|in|not_in|contains|not_contains|" +
    "starts_with|ends_with|array_contains|array_subset|array_superset|array_intersect, field, value} " +
    "(docs/data-filtering.md)",
  additionalProperties: true,
});

export const PlanResult = Type.Object({
  kind: Type.Union([
    Type.Literal("always_allowed"),
    Type.Literal("always_denied"),
    Type.Literal("conditional"),
  ]),
  condition: Type.Optional(PlanExpression),
  key_count: Type.Integer({ minimum: 0, description: "instance keys the condition lists" }),
  revision: Type.Integer({ description: "the environment revision the PDP answered at" }),
});

const Paging = {
  page_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  cursor: Type.Optional(
    Type.Union([
      Type.String({ maxLength: 200, description: "next_cursor of the previous page" }),
      Type.Null(),
    ]),
  ),
};

export const ListResourcesRequest = Type.Object({
  user: CheckUser,
  action: Key,
  resource: PlanRequest.properties.resource,
  context: Type.Optional(Attributes),
  ...Paging,
});

export const ListSubjectsRequest = Type.Object({
  action: Key,
  resource: Type.Union([
    Type.String({ minLength: 1, maxLength: 511, description: "type or type:key" }),
    Type.Object(
      {
        type: Key,
        key: Type.Optional(Type.String({ maxLength: 255 })),
        tenant: Type.Optional(Type.String({ maxLength: 255 })),
      },
      { additionalProperties: false },
    ),
  ]),
  context: Type.Optional(Attributes),
  ...Paging,
});

const listingPage = <T extends TSchema>(item: T) =>
  Type.Object({
    results: Type.Array(item),
    next_cursor: Type.Union([Type.String(), Type.Null()], {
      description:
        "null when the walk is complete; every page of a walk answers at its first page's revision",
    }),
    revision: Type.Integer({ description: "the environment revision every page of this walk answers at" }),
  });

export const ListResourcesResult = listingPage(Type.Object({ key: Type.String(), tenant: Type.String() }));
export const ListSubjectsResult = listingPage(Type.Object({ key: Type.String() }));

export const PdpStatus = Type.Object({
  environment_revision: Type.Integer({ description: "the environment's latest revision" }),
  pdp_id: Type.String(),
  pdp_revision: Type.Integer({ description: "the revision the embedded PDP's copy holds" }),
  revisions_behind: Type.Integer({ minimum: 0 }),
  lag_ms: Type.Integer({
    description: "how long the copy may have missed writes (0 at the head of its feed)",
  }),
  pdp_port: Type.Optional(
    Type.Integer({ description: "the port of the embedded PDP's check routes (GATEHOUSE_PDP_PORT)" }),
  ),
  opa_port: Type.Optional(
    Type.Integer({ description: "the PDP's OPA-compatible port (GATEHOUSE_OPA_PORT); 0 when off" }),
  ),
});

export { EnvParams };
