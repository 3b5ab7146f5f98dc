import { Type, type Static } from "typebox";
import { MAX_RATE_LIMIT_PER_MINUTE, MIN_RATE_LIMIT_PER_MINUTE } from "../config.ts";
import { JsonObject, Key, Name, Uuid } from "../lib/schemas.ts";
import { Stamps } from "../lib/schema-fields.ts";

/** The organization's shapes that its records (organization-records.ts) build and take; the module adds the rest. */

export const Region = Type.String({
  pattern: "^[a-z][a-z0-9]{0,15}$",
  description: "a region's name, such as us or eu",
});

export const OrganizationRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  name: Type.String(),
  is_enterprise: Type.Boolean(),
  settings: JsonObject,
  ...Stamps,
  region: Type.String({ description: "the region whose deployment stores and serves the organization" }),
  api_url: Type.String({
    description: "that deployment's public base URL: send the organization's calls there",
  }),
});
export type OrganizationRead = Static<typeof OrganizationRead>;

/** Free-form, except for the settings Gatehouse acts on. */
export const OrganizationSettings = Type.Object(
  {
    rate_limit_per_minute: Type.Optional(
      Type.Integer({
        minimum: MIN_RATE_LIMIT_PER_MINUTE,
        maximum: MAX_RATE_LIMIT_PER_MINUTE,
        description: `requests per minute per API key of this organization, at least ${MIN_RATE_LIMIT_PER_MINUTE} (default: the server's setting); members' sessions keep at least the server's setting`,
      }),
    ),
  },
  { additionalProperties: true },
);

export const OrganizationCreate = Type.Object({
  key: Key(),
  name: Name,
  settings: Type.Optional(OrganizationSettings),
  region: Type.Optional({
    ...Region,
    description:
      "where the organization lives (default: this deployment's region); another region creates it there",
  }),
});
export type OrganizationCreate = Static<typeof OrganizationCreate>;
