import { Fragment, useEffect, type ReactNode } from "react";
import { NavLink as RouterLink, useLocation, useNavigate } from "react-router";
import { useQueryClient } from "@tanstack/react-query";
import {
  AppShell,
  Burger,
  Button,
  Group,
  NavLink,
  Select,
  Stack,
  Text,
  Title,
  useComputedColorScheme,
  useMantineColorScheme,
} from "@mantine/core";
import { useDisclosure, useMediaQuery } from "@mantine/hooks";
import { api, setCsrfToken } from "../api/client";
import { envPath, useOrg, usePlace } from "../org";
import { useEnvironments, useProjects } from "../queries";
import type { Session } from "../session";
import { notifyError } from "../notify";
import { NAV } from "../nav";
import { useMayOpen } from "./PageAccess";

/** The frame of every page after login: switchers and logout on top, the pages on the side. */
export function Shell({ session, children }: { session: Session; children: ReactNode }) {
  const [opened, { toggle, close }] = useDisclosure();
  const { pathname } = useLocation();
  // On a phone the menu covers the page: it closes when a link or a switcher goes to another page.
  useEffect(close, [pathname, close]);
  // Below Mantine's `sm` (48em, the burger's breakpoint) the switchers move into the menu.
  const narrow = useMediaQuery("(max-width: 47.99em)") ?? false;
  const org = useOrg();
  const { proj, env } = usePlace();
  const mayOpen = useMayOpen();
  const base = `/o/${encodeURIComponent(org.key)}`;
  return (
    <AppShell
      header={{ height: 60 }}
      navbar={{ width: 220, breakpoint: "sm", collapsed: { mobile: !opened } }}
      padding="md"
    >
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Menu" />
            <Title order={2} size="h4">
              Gatehouse
            </Title>
            {!narrow && <Switchers session={session} />}
          </Group>
          <Group wrap="nowrap" gap="xs">
            <Text size="sm" c="dimmed" visibleFrom="md">
              {session.email}
            </Text>
            <ThemeToggle />
            <LogoutButton />
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Pages" style={{ overflowY: "auto" }}>
        {narrow && (
          <Stack gap="xs" mb="sm">
            <Switchers session={session} />
          </Stack>
        )}
        {NAV.map((group, i) => {
          if (group.env && !(proj && env)) return null;
          const to = (path: string) =>
            group.env && proj && env ? envPath(org.key, proj, env, path) : `${base}/${path}`;
          return (
            <Fragment key={i}>
              {group.title && (
                <Text size="xs" c="dimmed" mt="sm" px="sm">
                  {group.title}
                  {group.showsPlace && ` (${proj} / ${env})`}
                </Text>
              )}
              {group.pages
                .filter((page) => mayOpen(page.needs))
                .map((page) => (
                  <SideLink key={page.path} to={to(page.path)} label={page.label} />
                ))}
            </Fragment>
          );
        })}
      </AppShell.Navbar>
      <AppShell.Main>{children}</AppShell.Main>
    </AppShell>
  );
}

function SideLink({ to, label }: { to: string; label: string }) {
  const location = useLocation();
  return (
    <NavLink
      component={RouterLink}
      to={to}
      label={label}
      active={location.pathname === to || location.pathname.startsWith(`${to}/`)}
    />
  );
}

function Switchers({ session }: { session: Session }) {
  const org = useOrg();
  const { proj, env } = usePlace();
  const navigate = useNavigate();
  const projects = useProjects();
  const envs = useEnvironments(proj);
  const goToProject = async (key: string) => {
    // A project's first environment: the directory pages need one.
    const result = await api.GET("/v2/projects/{proj_id}/envs", {
      params: { path: { proj_id: key }, query: { per_page: 1 } },
    });
    const first = result.data?.[0];
    await navigate(first ? envPath(org.key, key, first.key) : `/o/${encodeURIComponent(org.key)}/projects`);
  };
  return (
    <>
      <Select
        aria-label="Organization"
        size="xs"
        w={170}
        allowDeselect={false}
        data={session.organizations.map((o) => ({ value: o.key, label: o.name }))}
        value={org.key}
        onChange={(key) => key && void navigate(`/o/${encodeURIComponent(key)}/projects`)}
      />
      <Select
        aria-label="Project"
        size="xs"
        w={170}
        placeholder="Project"
        allowDeselect={false}
        data={(projects.data ?? []).map((p) => ({ value: p.key, label: p.name }))}
        value={proj ?? null}
        onChange={(key) => key && void goToProject(key).catch(notifyError)}
      />
      <Select
        aria-label="Environment"
        size="xs"
        w={170}
        placeholder="Environment"
        allowDeselect={false}
        disabled={!proj}
        data={(envs.data ?? []).map((e) => ({ value: e.key, label: e.name }))}
        value={env ?? null}
        onChange={(key) => key && proj && void navigate(envPath(org.key, proj, key))}
      />
    </>
  );
}

/** Light or dark (the system's until chosen; Mantine keeps the choice in localStorage). */
function ThemeToggle() {
  const { setColorScheme } = useMantineColorScheme();
  const scheme = useComputedColorScheme("light");
  const next = scheme === "dark" ? "light" : "dark";
  return (
    <Button
      variant="default"
      size="xs"
      aria-label={`Switch to ${next} mode`}
      onClick={() => setColorScheme(next)}
    >
      {scheme === "dark" ? "Light" : "Dark"}
    </Button>
  );
}

function LogoutButton() {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const logout = async () => {
    const result = await api.POST("/v2/auth/logout");
    if (!result.response.ok && result.response.status !== 401) return notifyError(new Error("Logout failed"));
    setCsrfToken(undefined);
    queryClient.clear();
    await navigate("/login", { replace: true });
  };
  return (
    <Button variant="default" size="xs" onClick={() => void logout()}>
      Log out
    </Button>
  );
}
