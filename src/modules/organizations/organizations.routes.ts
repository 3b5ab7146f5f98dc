import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { principalOf } from "../../plugins/auth.ts";
import { Type } from "typebox";
import { errorResponses } from "../../lib/schemas.ts";
import { pageRequest } from "../../lib/pagination.ts";
import {
  OrganizationListQuery,
  OrganizationCreate,
  OrganizationRead,
  OrganizationReadWithAPIKey,
  OrganizationUpdate,
  OrgParams,
} from "./organizations.schemas.ts";
import { createOrganizationsService } from "./organizations.service.ts";
import { INTER_REGION_PATH, isRegionPeer } from "./other-regions.ts";
import { notFound } from "../../lib/errors.ts";

export const organizationsRoutes: FastifyPluginAsyncTypebox<
  Omit<Parameters<typeof createOrganizationsService>[0], "onSettingsChanged">
> = async (app, deps) => {
  // The rate limiter keeps each organization's limit for a while: a change of settings drops it at once.
  const organizations = createOrganizationsService({
    ...deps,
    onSettingsChanged: (organizationId) => app.rateLimits.forget(organizationId),
  });
  const tags = ["organizations"];
  // A member's session reaches these whatever its grants: they list its organizations (to switch between).
  app.get(
    "/v2/orgs/active/org",
    {
      config: { auth: "any" },
      schema: {
        tags,
        summary: "The organization of the calling key, or the session's active organization",
        response: { 200: OrganizationRead, ...errorResponses() },
      },
    },
    (req) => organizations.active(principalOf(req)),
  );
  app.get(
    "/v2/orgs",
    {
      config: { auth: "any" },
      schema: {
        tags,
        summary:
          "List the organizations the caller can reach (a key's own; a member's, all it holds grants in)",
        querystring: OrganizationListQuery,
        response: { 200: Type.Array(OrganizationRead), ...errorResponses() },
      },
    },
    (req) => organizations.list(principalOf(req), req.query.search, pageRequest(req.query)),
  );
  app.post(
    "/v2/orgs",
    {
      config: { need: { level: "org", access: "admin" } },
      schema: {
        tags,
        summary: "Create an organization (with a default project and an admin key, shown once)",
        body: OrganizationCreate,
        response: { 200: OrganizationReadWithAPIKey, ...errorResponses(409) },
      },
    },
    (req) => {
      // An organization of another region is stored only there: not even this region's API log keeps its name,
      // id or key (docs/regions.md).
      const region = req.body.region;
      if (region !== undefined && region !== deps.config.region) req.apiLogWithoutBodies = true;
      return organizations.create(req.body);
    },
  );
  // Another region's deployment creating an organization here (see other-regions.ts): the region secret, not a key.
  app.post(
    INTER_REGION_PATH,
    {
      // Without the region secret the route does not exist, whatever the body.
      onRequest: async (req) => {
        if (!isRegionPeer(req.headers.authorization, deps.config.regionSecret))
          throw notFound("route", `POST ${INTER_REGION_PATH}`);
      },
      schema: {
        hide: true,
        body: Type.Omit(OrganizationCreate, ["region"]),
        response: { 200: OrganizationReadWithAPIKey, ...errorResponses(409) },
      },
    },
    (req) => organizations.createHere(req.body),
  );
  app.get(
    "/v2/orgs/:org_id",
    {
      schema: {
        tags,
        summary: "Get an organization",
        params: OrgParams,
        response: { 200: OrganizationRead, ...errorResponses(404) },
      },
    },
    (req) => organizations.get(principalOf(req), req.params.org_id),
  );
  app.patch(
    "/v2/orgs/:org_id",
    {
      config: { need: { level: "org", access: "admin" } },
      schema: {
        tags,
        summary: "Update an organization",
        params: OrgParams,
        body: OrganizationUpdate,
        response: { 200: OrganizationRead, ...errorResponses(404) },
      },
    },
    (req) => organizations.update(principalOf(req), req.params.org_id, req.body),
  );
};
