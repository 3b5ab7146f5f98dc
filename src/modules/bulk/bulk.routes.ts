import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { envOf } from "../../plugins/auth.ts";
import { EnvParams, errorResponses } from "../../lib/schemas.ts";
import {
  BulkResult,
  InstanceBulkDelete,
  InstanceBulkWrite,
  TenantBulkCreate,
  TenantBulkDelete,
  UserBulkDelete,
  UserBulkWrite,
} from "./bulk.schemas.ts";
import { createBulkService } from "./bulk.service.ts";

/** Each bulk write is one transaction and one revision: everything or nothing. */
export const bulkRoutes: FastifyPluginAsyncTypebox<Parameters<typeof createBulkService>[0]> = async (
  app,
  deps,
) => {
  const bulk = createBulkService(deps);
  const tags = ["bulk"];
  const base = "/v2/facts/:proj_id/:env_id/bulk";
  const response = { 200: BulkResult, ...errorResponses(404, 409) };
  app.post(
    `${base}/users`,
    { schema: { tags, summary: "Create users", params: EnvParams, body: UserBulkWrite, response } },
    (req) => bulk.createUsers(envOf(req), req.body.operations),
  );
  app.put(
    `${base}/users`,
    {
      schema: { tags, summary: "Create or replace users", params: EnvParams, body: UserBulkWrite, response },
    },
    (req) => bulk.replaceUsers(envOf(req), req.body.operations),
  );
  app.delete(
    `${base}/users`,
    { schema: { tags, summary: "Delete users", params: EnvParams, body: UserBulkDelete, response } },
    (req) => bulk.deleteUsers(envOf(req), req.body.idents),
  );
  app.post(
    `${base}/tenants`,
    { schema: { tags, summary: "Create tenants", params: EnvParams, body: TenantBulkCreate, response } },
    (req) => bulk.createTenants(envOf(req), req.body.operations),
  );
  app.delete(
    `${base}/tenants`,
    {
      schema: {
        tags,
        summary: "Delete tenants with everything in them",
        params: EnvParams,
        body: TenantBulkDelete,
        response,
      },
    },
    (req) => bulk.deleteTenants(envOf(req), req.body.idents),
  );
  app.put(
    `${base}/resource_instances`,
    {
      schema: {
        tags,
        summary: "Create resource instances or replace their attributes",
        params: EnvParams,
        body: InstanceBulkWrite,
        response,
      },
    },
    (req) => bulk.writeInstances(envOf(req), req.body.operations),
  );
  app.delete(
    `${base}/resource_instances`,
    {
      schema: {
        tags,
        summary: "Delete resource instances",
        params: EnvParams,
        body: InstanceBulkDelete,
        response,
      },
    },
    (req) => bulk.deleteInstances(envOf(req), req.body.idents),
  );
};
