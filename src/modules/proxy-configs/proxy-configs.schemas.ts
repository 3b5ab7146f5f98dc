import { Type, type Static } from "typebox";
import { EnvParams, Key, Name, PageQuery, Ref, Uuid } from "../../lib/schemas.ts";
import { EnvIds, Stamps } from "../../lib/schema-fields.ts";

/** Permit's `Methods`. */
export const HttpMethod = Type.Union(
  ["get", "post", "put", "patch", "delete", "head", "options"].map((m) => Type.Literal(m)),
);

const mappingRuleFields = {
  url: Type.String({
    minLength: 1,
    maxLength: 2048,
    description:
      "an absolute http(s) URL whose path segments and query values may be `{placeholders}`, or a regex with url_type `regex`",
  }),
  url_type: Type.Optional(Type.Union([Type.Literal("regex"), Type.Null()])),
  http_method: HttpMethod,
  resource: Key("the resource type a matching request is checked on"),
  headers: Type.Optional(Type.Record(Type.String({ maxLength: 255 }), Type.String({ maxLength: 4096 }))),
  action: Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, description: "default: the rule's http_method" }),
  ),
  priority: Type.Optional(
    Type.Integer({ minimum: -1_000_000, maximum: 1_000_000, description: "the highest matching rule wins" }),
  ),
};

export const MappingRule = Type.Object(mappingRuleFields, { additionalProperties: false });
export type MappingRule = Static<typeof MappingRule>;

export const MappingRuleUpdate = Type.Object(
  {
    ...mappingRuleFields,
    should_delete: Type.Optional(
      Type.Boolean({ description: "deletes the config's rule with this http_method and url" }),
    ),
  },
  { additionalProperties: false },
);
export type MappingRuleUpdate = Static<typeof MappingRuleUpdate>;

const AuthMechanism = Type.Union([Type.Literal("Bearer"), Type.Literal("Basic"), Type.Literal("Headers")]);
const MAX_RULES = 1000;

export const ProxyConfigCreate = Type.Object({
  secret: Type.Unknown({ description: "sent by the Permit proxy to the backend; returned by reads" }),
  key: Key(),
  name: Name,
  mapping_rules: Type.Optional(Type.Array(MappingRule, { maxItems: MAX_RULES })),
  auth_mechanism: Type.Optional(AuthMechanism),
});
export type ProxyConfigCreate = Static<typeof ProxyConfigCreate>;

export const ProxyConfigUpdate = Type.Object({
  secret: Type.Optional(Type.Unknown()),
  name: Type.Optional(Name),
  mapping_rules: Type.Optional(Type.Array(MappingRuleUpdate, { maxItems: MAX_RULES })),
  auth_mechanism: Type.Optional(AuthMechanism),
});
export type ProxyConfigUpdate = Static<typeof ProxyConfigUpdate>;

export const StoredMappingRule = Type.Object({
  url: Type.String(),
  url_type: Type.Optional(Type.Literal("regex")),
  http_method: HttpMethod,
  resource: Type.String(),
  headers: Type.Record(Type.String(), Type.String()),
  action: Type.String(),
  priority: Type.Optional(Type.Integer()),
});
export type StoredMappingRule = Static<typeof StoredMappingRule>;

export const ProxyConfigRead = Type.Object({
  key: Type.String(),
  id: Uuid,
  ...EnvIds,
  ...Stamps,
  secret: Type.Unknown(),
  name: Type.String(),
  mapping_rules: Type.Array(StoredMappingRule),
  auth_mechanism: AuthMechanism,
});
export type ProxyConfigRead = Static<typeof ProxyConfigRead>;

export const ProxyConfigParams = Type.Object({
  ...EnvParams.properties,
  proxy_config_id: Ref("proxy config id or key"),
});
export type ProxyConfigParams = Static<typeof ProxyConfigParams>;

export const ProxyConfigListQuery = Type.Object(PageQuery);
