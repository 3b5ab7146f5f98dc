import type { ReactNode } from "react";
import { Stack } from "@mantine/core";
import { mayAccess, useMe, type Access } from "../session";
import { Empty, ErrorState, Loading } from "./states";
import { PageHead } from "./tables";

/** Whether the member of this session may open a page that needs this organization grant (none: anyone). */
export function useMayOpen(): (needs: Access | undefined) => boolean {
  const me = useMe();
  return (needs) => needs === undefined || mayAccess(me.data?.grants, needs);
}

const WHAT: Record<Access, string> = {
  read: "a grant on the whole organization (yours are on a project or an environment)",
  write: "write access to the organization",
  admin: "admin access to the organization: only its admins see and manage it",
};

/**
 * A page whose routes answer 403 without an organization grant of `needs`: the page for those who hold it, and
 * for the others (who see no link to it, but may follow a bookmark) a sentence saying what it needs, rather than
 * controls above a 403.
 */
export function PageAccess({
  title,
  needs,
  children,
}: {
  title: string;
  needs: Access | undefined;
  children: ReactNode;
}) {
  const me = useMe();
  if (needs === undefined) return <>{children}</>;
  if (me.error) return <ErrorState error={me.error} onRetry={() => void me.refetch()} />;
  if (me.isPending) return <Loading />;
  if (mayAccess(me.data.grants, needs)) return <>{children}</>;
  return (
    <Stack>
      <PageHead title={title} />
      <Empty>You need {WHAT[needs]}.</Empty>
    </Stack>
  );
}
