import { lazy, Suspense, useEffect } from "react";
import {
  createBrowserRouter,
  Navigate,
  Outlet,
  useLocation,
  useParams,
  type RouteObject,
} from "react-router";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { Container } from "@mantine/core";
import { api, ApiError, unwrap } from "./api/client";
import { ErrorState, Loading } from "./components/states";
import { Shell } from "./components/Shell";
import { NAV } from "./nav";
import { OrgContext } from "./org";
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

function NotFound() {
  const location = useLocation();
  return (
    <Container py="xl">
      <ErrorState error={new ApiError(404, "Not found", `no page at ${location.pathname}`)} />
    </Container>
  );
}

const page = (element: React.ReactNode) => <Suspense fallback={<Loading />}>{element}</Suspense>;

const routes: RouteObject[] = [
  { path: "/", element: <Home /> },
  { path: "/login", element: page(<LoginPage />) },
  { path: "/setup/:token", element: page(<SetupPage />) },
  { path: "/invite/:code", element: page(<InvitePage />) },
  {
    path: "/o/:org",
    element: <OrgLayout />,
    children: [
      { index: true, element: <Navigate to="projects" replace /> },
      { path: "p/:proj/e/:env", element: <Navigate to="overview" replace /> },
      ...NAV.flatMap((group) =>
        group.pages.map((page) => ({
          path: group.env ? `p/:proj/e/:env/${page.path}` : page.path,
          element: page.element,
        })),
      ),
      { path: "*", element: <NotFound /> },
    ],
  },
  { path: "*", element: <NotFound /> },
];

export const router = createBrowserRouter(routes);
