import { createContext, useContext } from "react";
import { useParams } from "react-router";

export interface Org {
  id: string;
  key: string;
  name: string;
}

export const OrgContext = createContext<Org | null>(null);

/** The organization of the URL (/o/{org}/...), which is the session's active one. */
export function useOrg(): Org {
  const org = useContext(OrgContext);
  if (!org) throw new Error("useOrg outside an organization's pages");
  return org;
}

/** The project and environment keys of the URL (/o/{org}/p/{proj}/e/{env}/...), when the page has them. */
export function usePlace(): { proj?: string; env?: string } {
  const { proj, env } = useParams();
  return { proj, env };
}

/** Where an environment's pages live. */
export function envPath(org: string, proj: string, env: string, page = "overview"): string {
  return `/o/${encodeURIComponent(org)}/p/${encodeURIComponent(proj)}/e/${encodeURIComponent(env)}/${page}`;
}
