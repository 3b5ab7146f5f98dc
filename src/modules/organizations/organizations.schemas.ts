import { Type, type Static } from "typebox";
import { JsonObject, Key, Name, Timestamp, Uuid } from "../../lib/schemas.ts";

export const OrganizationRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  name: Type.String(),
  is_enterprise: Type.Boolean(),
  settings: JsonObject,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type OrganizationRead = Static<typeof OrganizationRead>;

export const OrganizationReadWithAPIKey = Type.Object({
  ...OrganizationRead.properties,
  api_key_id: Uuid,
  api_key_secret: Type.String({ description: "the new organization's admin key; shown once" }),
});

export const OrganizationCreate = Type.Object({
  key: Key(),
  name: Name,
  settings: Type.Optional(JsonObject),
});
export type OrganizationCreate = Static<typeof OrganizationCreate>;

export const OrganizationUpdate = Type.Object({
  name: Type.Optional(Name),
  settings: Type.Optional(JsonObject),
});
export type OrganizationUpdate = Static<typeof OrganizationUpdate>;

export const OrgParams = Type.Object({ org_id: Type.String({ minLength: 1, maxLength: 255 }) });
