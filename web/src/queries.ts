import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "./api/client";
import { useOrg, usePlace } from "./org";
import { useMayWrite } from "./session";

const PER_PAGE = 100;

/** The active organization's projects (the first 100, which is what a switcher can show). */
export function useProjects() {
  const org = useOrg();
  return useQuery({
    queryKey: [org.id, "projects"],
    queryFn: async () => unwrap(await api.GET("/v2/projects", { params: { query: { per_page: PER_PAGE } } })),
  });
}

/** A project's environments. */
export function useEnvironments(proj: string | undefined) {
  const org = useOrg();
  return useQuery({
    queryKey: [org.id, "projects", proj, "envs"],
    enabled: proj !== undefined,
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/projects/{proj_id}/envs", {
          params: { path: { proj_id: proj ?? "" }, query: { per_page: PER_PAGE } },
        }),
      ),
  });
}

/** The ids of the URL's project and environment (grants name ids), once their lists have loaded. */
export function usePlaceIds(proj: string, env: string): { projectId?: string; environmentId?: string } {
  const projects = useProjects();
  const envs = useEnvironments(proj);
  return {
    projectId: projects.data?.find((p) => p.key === proj || p.id === proj)?.id,
    environmentId: envs.data?.find((e) => e.key === env || e.id === env)?.id,
  };
}

/** The URL's environment: its path parameters, the prefix of its query keys, and whether the member may write there. */
export function useEnvPath() {
  const org = useOrg();
  const { proj = "", env = "" } = usePlace();
  const canWrite = useMayWrite(usePlaceIds(proj, env));
  return { path: { proj_id: proj, env_id: env }, base: [org.id, proj, env], canWrite };
}
