import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./api/client";
import type { paths } from "./api/openapi";
import { useOrg, usePlace } from "./org";
import { usePlaceIds } from "./queries";
import { useMayWrite } from "./session";

type Json<P extends keyof paths, M extends "get"> = paths[P][M] extends {
  responses: { 200: { content: { "application/json": infer T } } };
}
  ? T
  : never;
export type Resource = Json<"/v2/schema/{proj_id}/{env_id}/resources/{resource_id}", "get">;
export type TenantRole = Json<"/v2/schema/{proj_id}/{env_id}/roles/{role_id}", "get">;
export type ResourceRole = Resource["roles"][string];
export type ConditionSet = Json<"/v2/schema/{proj_id}/{env_id}/condition_sets/{condition_set_id}", "get">;

const PER_PAGE = 100;

/** Every page of a list route (the policy pages show a whole environment's schema, which is small). */
async function allPages<T>(fetchPage: (page: number) => Promise<T[]>): Promise<T[]> {
  const all: T[] = [];
  for (let page = 1; ; page++) {
    const items = await fetchPage(page);
    all.push(...items);
    if (items.length < PER_PAGE) return all;
  }
}

/** The URL's environment: its path parameters, whether the member may write there, and the query key prefix. */
export function useEnvPlace() {
  const org = useOrg();
  const { proj = "", env = "" } = usePlace();
  const canWrite = useMayWrite(usePlaceIds(proj, env));
  return { path: { proj_id: proj, env_id: env }, canWrite, key: [org.id, proj, env, "schema"] as const };
}

/** Refetches every schema query of the environment (resources, roles, condition sets, set rules). */
export function useRefreshSchema() {
  const queryClient = useQueryClient();
  const { key } = useEnvPlace();
  return () => queryClient.invalidateQueries({ queryKey: key });
}

export function useResources() {
  const { path, key } = useEnvPlace();
  return useQuery({
    queryKey: [...key, "resources"],
    queryFn: () =>
      allPages(async (page) => {
        const result = unwrap(
          await api.GET("/v2/schema/{proj_id}/{env_id}/resources", {
            params: { path, query: { page, per_page: PER_PAGE } },
          }),
        );
        return Array.isArray(result) ? result : result.data;
      }),
  });
}

export function useTenantRoles() {
  const { path, key } = useEnvPlace();
  return useQuery({
    queryKey: [...key, "roles"],
    queryFn: () =>
      allPages(async (page) => {
        const result = unwrap(
          await api.GET("/v2/schema/{proj_id}/{env_id}/roles", {
            params: { path, query: { page, per_page: PER_PAGE } },
          }),
        );
        return Array.isArray(result) ? result : result.data;
      }),
  });
}

export function useConditionSets() {
  const { path, key } = useEnvPlace();
  return useQuery({
    queryKey: [...key, "condition_sets"],
    queryFn: () =>
      allPages(async (page) => {
        const result = unwrap(
          await api.GET("/v2/schema/{proj_id}/{env_id}/condition_sets", {
            params: { path, query: { page, per_page: PER_PAGE } },
          }),
        );
        return Array.isArray(result) ? result : result.data;
      }),
  });
}

/**
 * "a, b" -> ["a", "b"]: the keys typed into a list field, split at commas (and line ends) only. A space inside a
 * key stays, so that "bad action" reaches the API as one key and is refused with its message, not split in two.
 */
export const keyList = (text: string) =>
  text
    .split(/[,\n]/)
    .map((k) => k.trim())
    .filter((k) => k !== "");

/** The declared attributes of a resource, or of users (`__user`) or tenants (`__tenant`). */
export function useAttributes(resource: string | null) {
  const { path, key } = useEnvPlace();
  return useQuery({
    queryKey: [...key, "attributes", resource],
    enabled: resource !== null,
    queryFn: () =>
      allPages(async (page) =>
        unwrap(
          await api.GET("/v2/schema/{proj_id}/{env_id}/resources/{resource_id}/attributes", {
            params: { path: { ...path, resource_id: resource ?? "" }, query: { page, per_page: PER_PAGE } },
          }),
        ),
      ),
  });
}
