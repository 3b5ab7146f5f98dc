import { Type, type Static } from "typebox";
import { Name, PageQuery, Uuid } from "../../lib/schemas.ts";
import { OrganizationRead, OrganizationSettings } from "../../domain/organization.schemas.ts";

export { OrganizationCreate, OrganizationRead } from "../../domain/organization.schemas.ts";

export const OrganizationReadWithAPIKey = Type.Object({
  ...OrganizationRead.properties,
  api_key_id: Uuid,
  api_key_secret: Type.String({ description: "the new organization's admin key; shown once" }),
});

export const OrganizationUpdate = Type.Object({
  name: Type.Optional(Name),
  settings: Type.Optional(OrganizationSettings),
});
export type OrganizationUpdate = Static<typeof OrganizationUpdate>;

export const OrgParams = Type.Object({ org_id: Type.String({ minLength: 1, maxLength: 255 }) });

export const OrganizationListQuery = Type.Object({
  search: Type.Optional(
    Type.String({ maxLength: 255, description: "part of the organization's name or key, or its id" }),
  ),
  ...PageQuery,
});
export type OrganizationListQuery = Static<typeof OrganizationListQuery>;
