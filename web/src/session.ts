import { useQuery } from "@tanstack/react-query";
import { api, setCsrfToken, unwrap } from "./api/client";

export type Session = NonNullable<Awaited<ReturnType<typeof fetchSession>>>;

/** The calling session, or null when nobody is logged in (401). */
export async function fetchSession() {
  const result = await api.GET("/v2/auth/session");
  if (result.response.status === 401) {
    setCsrfToken(undefined);
    return null;
  }
  const session = unwrap(result);
  setCsrfToken(session.csrf_token);
  return session;
}

export function useSession() {
  return useQuery({ queryKey: ["session"], queryFn: fetchSession, staleTime: 60_000, retry: false });
}

/** The member's grants in the active organization, to hide what a `read` member may not do. */
export function useMe() {
  return useQuery({ queryKey: ["me"], queryFn: async () => unwrap(await api.GET("/v2/members/me")) });
}

type Grant = { object_type: string; access_level: string; project_id?: string; environment_id?: string };

const WRITES = new Set(["admin", "write"]);

/**
 * Whether the grants allow writes at this place: an organization grant covers everything, a project grant its
 * project (and its environments), an environment grant its environment. `admin` is needed for the organization's
 * own settings (keys, members, the organization).
 */
export function mayWrite(
  grants: Grant[] | undefined,
  place: { projectId?: string; environmentId?: string; admin?: boolean } = {},
): boolean {
  const levels = place.admin ? new Set(["admin"]) : WRITES;
  return (grants ?? []).some((g) => {
    if (!levels.has(g.access_level)) return false;
    if (g.object_type === "org") return true;
    if (g.object_type === "project") return place.projectId !== undefined && g.project_id === place.projectId;
    return place.environmentId !== undefined && g.environment_id === place.environmentId;
  });
}

/** mayWrite for the member of this session. */
export function useMayWrite(
  place: { projectId?: string; environmentId?: string; admin?: boolean } = {},
): boolean {
  const me = useMe();
  return mayWrite(me.data?.grants, place);
}
