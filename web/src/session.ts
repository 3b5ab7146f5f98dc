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

/** What a control or a page needs, as the API's routes declare it. */
export type Access = "read" | "write" | "admin";

const RANK: Record<string, number | undefined> = { read: 1, write: 2, admin: 3 };

/** Where an action happens: nowhere named means the organization itself (only an organization grant covers it). */
export interface Place {
  projectId?: string;
  environmentId?: string;
}

/**
 * Whether the grants allow `access` at this place: an organization grant covers everything, a project grant its
 * project (and its environments), an environment grant its environment. The dashboard hides what the API would
 * only refuse with this one test (docs/dashboard.md, "What each member sees").
 */
export function mayAccess(grants: Grant[] | undefined, access: Access, place: Place = {}): boolean {
  return (grants ?? []).some((g) => {
    if ((RANK[g.access_level] ?? 0) < (RANK[access] ?? 0)) return false;
    if (g.object_type === "org") return true;
    if (g.object_type === "project") return place.projectId !== undefined && g.project_id === place.projectId;
    return place.environmentId !== undefined && g.environment_id === place.environmentId;
  });
}

/**
 * Whether the grants allow writes at this place; `admin` is needed for the organization's own settings (keys,
 * members, the organization).
 */
export function mayWrite(grants: Grant[] | undefined, place: Place & { admin?: boolean } = {}): boolean {
  return mayAccess(grants, place.admin ? "admin" : "write", place);
}

/** mayWrite for the member of this session. */
export function useMayWrite(place: Place & { admin?: boolean } = {}): boolean {
  const me = useMe();
  return mayWrite(me.data?.grants, place);
}
