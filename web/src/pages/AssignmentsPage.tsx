import { useState } from "react";
import { useSearchParams } from "react-router";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Autocomplete, Button, Group, SimpleGrid, Stack, Text, TextInput } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { api, unwrap } from "../api/client";
import { FormModal, formText } from "../components/dialogs";
import { asPage } from "../components/fields";
import { PagedTable, PageHead, RowButton } from "../components/tables";
import { useEnvPath } from "../queries";
import { notifyError } from "../notify";
import { FormProblem } from "../components/sentences";
import { AssignmentImport } from "./AssignmentImport";

const PER_PAGE = 20;
const FILTERS = ["user", "role", "tenant", "resource_instance"] as const;
type Filter = (typeof FILTERS)[number];
type Assignment = {
  id: string;
  user: string;
  role: string;
  tenant: string;
  resource_instance?: string;
  expires_at?: string;
};

/** The page's filters and page, kept in the URL; a filter is sent once typing pauses. */
function useFilters() {
  const [params, setParams] = useSearchParams();
  const page = Math.max(1, Number(params.get("page") ?? "1") || 1);
  const [typed, setTyped] = useState<Record<Filter, string>>(
    () => Object.fromEntries(FILTERS.map((f) => [f, params.get(f) ?? ""])) as Record<Filter, string>,
  );
  const [sent] = useDebouncedValue(typed, 300);
  const write = (values: Record<Filter, string>, next: number) =>
    setParams({
      ...Object.fromEntries(FILTERS.flatMap((f) => (values[f].trim() ? [[f, values[f].trim()]] : []))),
      ...(next > 1 && { page: String(next) }),
    });
  return {
    page,
    typed,
    sent,
    goTo: (next: number) => write(sent, next),
    set: (f: Filter, value: string) => {
      const values = { ...typed, [f]: value };
      setTyped(values);
      write(values, 1);
    },
  };
}

/** A datetime-local value (the browser's time zone) as ISO 8601 with an offset, or undefined when empty. */
function expiryOf(value: string): string | undefined {
  if (!value) return undefined;
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw new FormProblem("The expiry is not a date and time.");
  if (at.getTime() <= Date.now()) throw new FormProblem("The expiry must be in the future.");
  return at.toISOString();
}

/** Every role assignment of the environment, a page at a time, filtered by user, role, tenant or instance. */
export default function AssignmentsPage() {
  const { path, base, canWrite } = useEnvPath();
  const filters = useFilters();
  const { page, sent } = filters;
  const [dialog, setDialog] = useState<"assign" | "import" | null>(null);
  const queryClient = useQueryClient();
  const query = Object.fromEntries(
    FILTERS.flatMap((f) => {
      const v = sent[f].trim();
      if (!v) return [];
      return [[f, f === "resource_instance" ? v : [v]]];
    }),
  );
  const assignments = useQuery({
    queryKey: [...base, "role-assignments", "all", query, page],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      asPage(
        unwrap(
          await api.GET("/v2/facts/{proj_id}/{env_id}/role_assignments", {
            params: { path, query: { ...query, page, per_page: PER_PAGE, include_total_count: true } },
          }),
        ) as Assignment[] | { data: Assignment[]; total_count: number; page_count: number },
      ),
  });
  const roles = useQuery({
    queryKey: [...base, "roles"],
    enabled: dialog === "assign",
    queryFn: async () =>
      asPage(
        unwrap(
          await api.GET("/v2/schema/{proj_id}/{env_id}/roles", {
            params: { path, query: { per_page: 100 } },
          }),
        ),
      ).data,
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: [...base, "role-assignments"] });
  const unassign = async (a: Assignment) => {
    try {
      unwrap(
        await api.DELETE("/v2/facts/{proj_id}/{env_id}/role_assignments", {
          params: { path },
          body: {
            user: a.user,
            role: a.role,
            ...(a.resource_instance ? { resource_instance: a.resource_instance } : { tenant: a.tenant }),
          },
        }),
      );
      await refresh();
    } catch (error) {
      notifyError(error);
    }
  };
  const filtered = FILTERS.some((f) => sent[f].trim());

  return (
    <Stack>
      <PageHead
        title="Role assignments"
        action={
          canWrite && (
            <Group>
              <Button variant="default" onClick={() => setDialog("import")}>
                Import CSV
              </Button>
              <Button onClick={() => setDialog("assign")}>Assign a role</Button>
            </Group>
          )
        }
      />
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 4 }} role="search" aria-label="Filter assignments">
        {FILTERS.map((f) => (
          <TextInput
            key={f}
            label={`Filter by ${f.replace("_", " ")}`}
            placeholder={f === "resource_instance" ? "type:key" : "key"}
            value={filters.typed[f]}
            onChange={(e) => filters.set(f, e.currentTarget.value)}
          />
        ))}
      </SimpleGrid>
      <PagedTable
        label="Role assignments"
        query={assignments}
        empty={
          filtered ? "No assignment matches these filters." : "No role is assigned in this environment yet."
        }
        noun="assignments"
        page={page}
        onPage={filters.goTo}
        columns={["User", "Role", "Tenant or instance", "Expires", canWrite && "Actions"]}
        rowKey={(a) => a.id}
        cells={(a) => [
          <Text ff="monospace" size="sm">
            {a.user}
          </Text>,
          a.role,
          a.resource_instance ?? a.tenant,
          a.expires_at ? new Date(a.expires_at).toLocaleString() : "never",
          <RowButton
            label={`Unassign ${a.role} from ${a.user} in ${a.resource_instance ?? a.tenant}`}
            danger
            onClick={() => void unassign(a)}
          >
            Unassign
          </RowButton>,
        ]}
      />

      <FormModal
        title="Assign a role"
        opened={dialog === "assign"}
        onClose={() => setDialog(null)}
        submitLabel="Assign"
        onSubmit={async (form) => {
          const instance = formText(form, "resource_instance");
          const tenant = formText(form, "tenant");
          const expires = expiryOf(formText(form, "expires_at"));
          unwrap(
            await api.POST("/v2/facts/{proj_id}/{env_id}/role_assignments", {
              params: { path },
              body: {
                user: formText(form, "user"),
                role: formText(form, "role"),
                ...(tenant && { tenant }),
                ...(instance && { resource_instance: instance }),
                ...(expires && { expires_at: expires }),
              },
            }),
          );
          await refresh();
        }}
      >
        <TextInput label="User" name="user" placeholder="user key" required data-autofocus />
        <Autocomplete
          label="Role"
          name="role"
          required
          description="a tenant role; for a role on an instance, type its key and the instance"
          data={(roles.data ?? []).map((r) => r.key)}
        />
        <TextInput label="Tenant" name="tenant" placeholder="tenant key (for a tenant role)" />
        <TextInput
          label="Resource instance"
          name="resource_instance"
          placeholder="type:key (for an instance role)"
        />
        <TextInput
          label="Expires"
          name="expires_at"
          type="datetime-local"
          description="optional: the role stops granting at this time (your time zone)"
        />
      </FormModal>

      {dialog === "import" && (
        <AssignmentImport onClose={() => setDialog(null)} onDone={() => void refresh()} />
      )}
    </Stack>
  );
}
