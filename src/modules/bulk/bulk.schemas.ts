import { Type, type Static } from "typebox";
import { Ref } from "../../lib/schemas.ts";
import { UserCreate } from "../users/users.schemas.ts";
import { TenantCreate } from "../tenants/tenants.schemas.ts";
import { ResourceInstanceCreate } from "../resource-instances/resource-instances.schemas.ts";

const MAX_ITEMS = 1000;
const operations = <T extends Parameters<typeof Type.Array>[0]>(item: T) =>
  Type.Object({ operations: Type.Array(item, { maxItems: MAX_ITEMS }) });
const idents = (description: string) =>
  Type.Object({ idents: Type.Array(Ref(description), { maxItems: MAX_ITEMS }) });

export const UserBulkWrite = operations(UserCreate);
export type UserBulkWrite = Static<typeof UserBulkWrite>;
export const UserBulkDelete = idents("user id or key");
export const TenantBulkCreate = operations(TenantCreate);
export type TenantBulkCreate = Static<typeof TenantBulkCreate>;
export const TenantBulkDelete = idents("tenant id or key");
export const InstanceBulkWrite = operations(ResourceInstanceCreate);
export type InstanceBulkWrite = Static<typeof InstanceBulkWrite>;
export const InstanceBulkDelete = idents("instance id or `type:key`");
export const BulkResult = Type.Object({}, { description: "bulk results are an empty object" });
