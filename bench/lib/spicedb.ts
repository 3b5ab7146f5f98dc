import type { PdpDataset } from "./pdp-dataset.ts";

/**
 * The ReBAC part of the PDP scenario's schema (bench/lib/pdp-dataset.ts) in SpiceDB's schema language. Gatehouse
 * derives roles along relations ("account admins are project editors", ...); SpiceDB says the same with arrows.
 * Tenants need no counterpart: every instance key in the dataset already names its tenant, so no derivation can
 * cross tenants in either system.
 */
export const SPICEDB_SCHEMA = `definition user {}

definition account {
  relation admin: user
}

definition project {
  relation account: account
  relation editor: user
  permission edit = editor + account->admin
}

definition folder {
  relation project: project
  relation editor: user
  permission edit = editor + project->edit
}

definition file {
  relation folder: folder
  relation editor: user
  relation viewer: user
  permission write = editor + folder->edit
  permission read = write + viewer
}
`;

/** One SpiceDB relationship, `type:id#relation@type:id`, split into its parts. */
export interface SpiceRelationship {
  resource: { type: string; id: string };
  relation: string;
  subject: { type: string; id: string };
}

const ref = (typeAndKey: string) => {
  const at = typeAndKey.indexOf(":");
  return { type: typeAndKey.slice(0, at), id: typeAndKey.slice(at + 1) };
};

/**
 * The dataset's relationship tuples and instance role assignments as SpiceDB relationships: a tuple
 * `subject -relation-> object` is `object#relation@subject`; an instance role is `instance#role@user:key`.
 */
export function spiceRelationships(dataset: PdpDataset): SpiceRelationship[] {
  return [
    ...dataset.tuples.map((tuple) => ({
      resource: ref(tuple.object),
      relation: tuple.relation,
      subject: ref(tuple.subject),
    })),
    ...dataset.instanceAssignments.map((assignment) => ({
      resource: ref(assignment.resource_instance),
      relation: assignment.role,
      subject: { type: "user", id: assignment.user },
    })),
  ];
}
