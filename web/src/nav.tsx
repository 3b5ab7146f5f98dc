import { lazy, type ReactNode } from "react";
import type { Access } from "./session";

// Each page is its own chunk: the first load fetches the frame and the page it opens only.
const ProjectsPage = lazy(() => import("./pages/ProjectsPage"));
const UsersPage = lazy(() => import("./pages/UsersPage"));
const ApiKeysPage = lazy(() => import("./pages/ApiKeysPage"));
const WebhooksPage = lazy(() => import("./pages/WebhooksPage"));
const TenantsPage = lazy(() => import("./pages/TenantsPage"));
const ApiLogPage = lazy(() => import("./pages/ApiLogPage"));
const ActivityPage = lazy(() => import("./pages/ActivityPage"));
const MembersPage = lazy(() => import("./pages/MembersPage"));
const OrganizationPage = lazy(() => import("./pages/OrganizationPage"));
const LoginSettingsPage = lazy(() => import("./pages/LoginSettingsPage"));
const ProfilePage = lazy(() => import("./pages/ProfilePage"));
const OverviewPage = lazy(() => import("./pages/OverviewPage"));
const InstancesPage = lazy(() => import("./pages/InstancesPage"));
const PlaygroundPage = lazy(() => import("./pages/PlaygroundPage"));
const DecisionLogPage = lazy(() => import("./pages/DecisionLogPage"));
const ConnectPage = lazy(() => import("./pages/ConnectPage"));
const AssignmentsPage = lazy(() => import("./pages/AssignmentsPage"));
const AttributesPage = lazy(() => import("./pages/AttributesPage"));
const PolicyPage = lazy(() => import("./pages/PolicyPage"));
// The four policy pages are one chunk.
const PolicyPages = lazy(() => import("./pages/policy"));

/** A page of an organization: its path below `/o/{org}/` (or `/o/{org}/p/{proj}/e/{env}/`), its link's label. */
export interface NavPage {
  path: string;
  label: string;
  element: ReactNode;
  /**
   * The organization grant its routes need even to read (they answer others 403): a member without it sees no
   * link, and a direct visit says what is needed instead of showing a page that can only refuse.
   */
  needs?: Access;
}

/**
 * The pages after login, in the side bar's order and groups; the router makes a route of each. An environment's
 * groups (`env`) are shown once the URL names a project and an environment; the first names them (`showsPlace`).
 */
export const NAV: { title?: string; env: boolean; showsPlace?: boolean; pages: NavPage[] }[] = [
  {
    env: false,
    pages: [
      { path: "projects", label: "Projects", element: <ProjectsPage /> },
      { path: "activity", label: "Activity", element: <ActivityPage /> },
      { path: "api-log", label: "API log", element: <ApiLogPage /> },
    ],
  },
  {
    title: "Directory",
    env: true,
    showsPlace: true,
    pages: [
      { path: "users", label: "Users", element: <UsersPage /> },
      { path: "tenants", label: "Tenants", element: <TenantsPage /> },
      { path: "role-assignments", label: "Role assignments", element: <AssignmentsPage /> },
    ],
  },
  {
    title: "Authorization",
    env: true,
    pages: [
      { path: "overview", label: "Overview", element: <OverviewPage /> },
      { path: "connect", label: "Connect your app", element: <ConnectPage /> },
      { path: "instances", label: "Instances", element: <InstancesPage /> },
      { path: "check", label: "Check playground", element: <PlaygroundPage /> },
      { path: "decisions", label: "Decision log", element: <DecisionLogPage /> },
    ],
  },
  {
    title: "Policy",
    env: true,
    pages: [
      { path: "resources", label: "Resources", element: <PolicyPages page="resources" /> },
      { path: "roles", label: "Tenant roles", element: <PolicyPages page="roles" /> },
      { path: "policy", label: "Policy editor", element: <PolicyPages page="policy" /> },
      { path: "attributes", label: "Attributes", element: <AttributesPage /> },
      { path: "abac", label: "ABAC", element: <PolicyPages page="abac" /> },
      { path: "policy-as-code", label: "Policy as code", element: <PolicyPage /> },
    ],
  },
  {
    title: "Settings",
    env: false,
    pages: [
      { path: "settings/api-keys", label: "API keys", element: <ApiKeysPage />, needs: "admin" },
      { path: "settings/webhooks", label: "Webhooks", element: <WebhooksPage />, needs: "admin" },
      { path: "settings/members", label: "Members", element: <MembersPage />, needs: "read" },
      { path: "settings/organization", label: "Organization", element: <OrganizationPage /> },
      { path: "settings/login", label: "Login and SSO", element: <LoginSettingsPage />, needs: "admin" },
      { path: "settings/profile", label: "Your profile", element: <ProfilePage /> },
    ],
  },
];
