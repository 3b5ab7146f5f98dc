import { lazy, Suspense, useEffect } from "react";
import {
  createBrowserRouter,
  Navigate,
  Outlet,
  useLocation,
  useParams,
  type RouteObject,
} from "react-router";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Container } from "@mantine/core";
import { useDocumentTitle } from "@mantine/hooks";
import { api, ApiError, unwrap } from "./api/client";
import { ErrorState, Loading } from "./components/states";
import { PageAccess } from "./components/PageAccess";
import { Shell } from "./components/Shell";
import { NAV } from "./nav";
import { OrgContext, useOrg } from "./org";
import { useSession, type Session } from "./session";

// Each page is its own chunk: the first load fetches the frame and the page it opens only.
const AuthPages = () => import("./pages/AuthPages");
const LoginPage = lazy(async () => ({ default: (await AuthPages()).LoginPage }));
const SetupPage = lazy(async () => ({ default: (await AuthPages()).SetupPage }));
const InvitePage = lazy(async () => ({ default: (await AuthPages()).InvitePage }));

/** Pages after login: a session is needed, else the login page (and back here after it). */
function RequireSession({ children }: { children: (session: Session) => React.ReactNode }) {
  const session = useSession();
  const location = useLocation();
  if (session.error) {
    return (
      <Container py="xl">
        <ErrorState error={session.error} onRetry={() => void session.refetch()} />
      </Container>
    );
  }
  if (session.isPending) return <Loading />;
  if (!session.data) {
    return <Navigate to={`/login?next=${encodeURIComponent(location.pathname + location.search)}`} replace />;
  }
  return <>{children(session.data)}</>;
}

/** `/`: the active organization's projects. */
function Home() {
  return (
    <RequireSession>
      {(session) => {
        const active =
          session.organizations.find((o) => o.id === session.active_organization_id) ??
          session.organizations[0];
        if (!active) {
          return (
            <Container py="xl">
              <ErrorState error={new ApiError(403, "No organization", "this member holds no grant yet")} />
            </Container>
          );
        }
        return <Navigate to={`/o/${encodeURIComponent(active.key)}/projects`} replace />;
      }}
    </RequireSession>
  );
}

/** /o/{org}/...: makes the URL's organization the session's active one, then shows the frame around the page. */
function OrgLayout() {
  return <RequireSession>{(session) => <ActiveOrg session={session} />}</RequireSession>;
}

function ActiveOrg({ session }: { session: Session }) {
  const { org: ref = "" } = useParams();
  const queryClient = useQueryClient();
  const org = session.organizations.find((o) => o.key === ref || o.id === ref);
  const switchOrg = useMutation({
    mutationFn: async (id: string) =>
      unwrap(await api.PUT("/v2/auth/session/organization", { body: { organization_id: id } })),
    onSuccess: (next) => {
      queryClient.setQueryData(["session"], next);
      void queryClient.invalidateQueries({ queryKey: ["me"] });
    },
  });
  const mustSwitch = org !== undefined && org.id !== session.active_organization_id;
  const { mutate, isPending, error } = switchOrg;
  useEffect(() => {
    if (mustSwitch && !isPending && !error) mutate(org.id);
  }, [mustSwitch, isPending, error, mutate, org]);
  if (!org) {
    return (
      <Container py="xl">
        <ErrorState error={new ApiError(404, "Not found", `no organization '${ref}' among yours`)} />
      </Container>
    );
  }
  if (error) {
    return (
      <Container py="xl">
        <ErrorState error={error} onRetry={switchOrg.reset} />
      </Container>
    );
  }
  if (mustSwitch) return <Loading />;
  return (
    <OrgContext.Provider value={org}>
      <Shell session={session}>
        <Suspense fallback={<Loading />}>
          <Outlet />
        </Suspense>
      </Shell>
    </OrgContext.Provider>
  );
}

/** Sets the tab's title: the page, then the product. */
function Titled({ title, children }: { title: string; children: React.ReactNode }) {
  useDocumentTitle(`${title} · Gatehouse`);
  return <>{children}</>;
}

function NotFound({ message }: { message?: string }) {
  const location = useLocation();
  useDocumentTitle("Not found · Gatehouse");
  return (
    <Container py="xl">
      <ErrorState error={new ApiError(404, "Not found", message ?? `no page at ${location.pathname}`)} />
    </Container>
  );
}

/**
 * An environment's pages: the URL's project and environment must exist (a deep link to an unknown one shows
 * a not-found page, not the page's controls above a 404). Any other failure is left to the page.
 */
function EnvPlace() {
  const org = useOrg();
  const { proj = "", env = "" } = useParams();
  const place = useQuery({
    queryKey: [org.id, "place", proj, env],
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/projects/{proj_id}/envs/{env_id}", {
          params: { path: { proj_id: proj, env_id: env } },
        }),
      ),
  });
  if (place.isPending) return <Loading />;
  if (place.error instanceof ApiError && place.error.status === 404)
    return <NotFound message={place.error.message} />;
  return <Outlet />;
}

const page = (element: React.ReactNode, title: string) => (
  <Titled title={title}>
    <Suspense fallback={<Loading />}>{element}</Suspense>
  </Titled>
);

const pageRoutes = (group: (typeof NAV)[number]): RouteObject[] =>
  group.pages.map((p) => ({
    path: p.path,
    element: (
      <Titled title={p.label}>
        <PageAccess title={p.label} needs={p.needs}>
          {p.element}
        </PageAccess>
      </Titled>
    ),
  }));

const routes: RouteObject[] = [
  { path: "/", element: <Home /> },
  { path: "/login", element: page(<LoginPage />, "Log in") },
  { path: "/setup/:token", element: page(<SetupPage />, "Set up") },
  { path: "/invite/:code", element: page(<InvitePage />, "Invitation") },
  {
    path: "/o/:org",
    element: <OrgLayout />,
    children: [
      { index: true, element: <Navigate to="projects" replace /> },
      ...NAV.filter((group) => !group.env).flatMap(pageRoutes),
      {
        path: "p/:proj/e/:env",
        element: <EnvPlace />,
        children: [
          { index: true, element: <Navigate to="overview" replace /> },
          ...NAV.filter((group) => group.env).flatMap(pageRoutes),
          { path: "*", element: <NotFound /> },
        ],
      },
      { path: "*", element: <NotFound /> },
    ],
  },
  { path: "*", element: <NotFound /> },
];

export const router = createBrowserRouter(routes);
