import { Type } from "typebox";

/** The API key's enumerations that organization-rows.ts checks an import against; the module adds the rest. */

export const ScopeLevelSchema = Type.Union([
  Type.Literal("org"),
  Type.Literal("project"),
  Type.Literal("env"),
]);
export const AccessLevelSchema = Type.Union([
  Type.Literal("admin"),
  Type.Literal("write"),
  Type.Literal("read"),
  Type.Literal("no_access"),
]);
export const OwnerTypeSchema = Type.Union([
  Type.Literal("member"),
  Type.Literal("pdp_config"),
  Type.Literal("elements"),
]);
