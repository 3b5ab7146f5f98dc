import { Type, type TSchema } from "typebox";

/** Shared TypeBox pieces: every request and response shape is built from these. */
export const KEY_PATTERN = "^[A-Za-z0-9\\-_]+$";
export const Key = (description = "identifier chosen by the client") =>
  Type.String({ pattern: KEY_PATTERN, minLength: 1, maxLength: 255, description });
export const Name = Type.String({ minLength: 1, maxLength: 255 });
export const Description = Type.String({ maxLength: 4096 });
export const Uuid = Type.String({ format: "uuid" });
export const Timestamp = Type.String({ format: "date-time", description: "ISO 8601 with UTC offset" });
export const JsonObject = Type.Record(Type.String(), Type.Unknown());
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
export const Ref = (description: string) => Type.String({ minLength: 1, maxLength: 512, description });

/** The fields of an error: of every non-2xx body, and of a failed task. */
export const ErrorFields = {
  id: Type.String(),
  error_code: Type.String(),
  title: Type.String(),
  message: Type.String(),
  support_link: Type.String(),
  additional_info: Type.Optional(JsonObject),
};

export const ErrorBodySchema = Type.Object(
  {
    ...ErrorFields,
    detail: Type.Optional(
      Type.Array(
        Type.Object({
          loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
          msg: Type.String(),
          type: Type.String(),
        }),
      ),
    ),
  },
  { $id: "ErrorDetails", description: "The body of every non-2xx response" },
);

export const PageQuery = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 30 })),
};

export const Paginated = <T extends TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), total_count: Type.Integer(), page_count: Type.Integer() });

export const ProjectParams = Type.Object({ proj_id: Ref("project id or key") });
export const EnvParams = Type.Object({
  proj_id: Ref("project id or key"),
  env_id: Ref("environment id or key"),
});

/** Error responses every authenticated route may give, so the OpenAPI document tells the truth. */
export const errorResponses = (...codes: number[]) =>
  Object.fromEntries([401, 403, 422, 429, ...codes].map((code) => [code, { $ref: "ErrorDetails#" }]));
