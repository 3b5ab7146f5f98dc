import ResourcesPage from "./ResourcesPage";
import RolesPage from "./RolesPage";
import PolicyPage from "./PolicyPage";
import AbacPage from "./AbacPage";

const PAGES = { resources: ResourcesPage, roles: RolesPage, policy: PolicyPage, abac: AbacPage };

/** The policy pages are one chunk, so the first page's entry names one lazy import for all four. */
export default function PolicyPages({ page }: { page: string }) {
  const Page = PAGES[page as keyof typeof PAGES];
  return <Page />;
}
