import { useState } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Group, Select, Stack, Text } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { api, unwrap } from "../api/client";
import { FormModal, formText } from "../components/dialogs";
import { asPage } from "../components/fields";
import { Empty, QueryState } from "../components/states";
import { useOrg, usePlace } from "../org";
import { notifyError } from "../notify";
import { named } from "../components/user-text";
import { DataTable, RowButton } from "../components/tables";

const PER_PAGE = 100;

type Assignment = { id: string; role: string; tenant: string; resource_instance?: string };

/** A user's role assignments per tenant: assign a role in a tenant, unassign one. */
export function UserRolesModal({
  userKey,
  canWrite,
  onClose,
  onChanged,
}: {
  userKey: string;
  canWrite: boolean;
  onClose: () => void;
  onChanged: () => Promise<unknown>;
}) {
  const org = useOrg();
  const { proj = "", env = "" } = usePlace();
  const path = { proj_id: proj, env_id: env };
  const queryClient = useQueryClient();
  const [tenantSearch, setTenantSearch] = useState("");
  const [tenantQuery] = useDebouncedValue(tenantSearch.trim(), 300);
  const assignmentsKey = [org.id, proj, env, "role-assignments", userKey];
  const assignments = useQuery({
    queryKey: assignmentsKey,
    queryFn: async () =>
      asPage(
        // Not `detailed`: the plain shape of the route's answers.
        unwrap(
          await api.GET("/v2/facts/{proj_id}/{env_id}/role_assignments", {
            params: { path, query: { user: [userKey], per_page: PER_PAGE } },
          }),
        ) as Assignment[],
      ).data,
  });
  const roles = useQuery({
    queryKey: [org.id, proj, env, "roles"],
    enabled: canWrite,
    queryFn: async () =>
      asPage(
        unwrap(
          await api.GET("/v2/schema/{proj_id}/{env_id}/roles", {
            params: { path, query: { per_page: PER_PAGE } },
          }),
        ),
      ).data,
  });
  // Tenants are searched on the server: an environment may hold more than a list can show.
  const tenants = useQuery({
    queryKey: [org.id, proj, env, "tenants", "pick", tenantQuery],
    enabled: canWrite,
    queryFn: async () =>
      asPage(
        unwrap(
          await api.GET("/v2/facts/{proj_id}/{env_id}/tenants", {
            params: { path, query: { per_page: 20, ...(tenantQuery && { search: tenantQuery }) } },
          }),
        ),
      ).data,
  });
  const changed = async () => {
    await queryClient.invalidateQueries({ queryKey: assignmentsKey });
    await onChanged();
  };
  const unassign = async (role: string, tenant: string) => {
    try {
      unwrap(
        await api.DELETE("/v2/facts/{proj_id}/{env_id}/users/{user_id}/roles", {
          params: { path: { ...path, user_id: userKey } },
          body: { role, tenant },
        }),
      );
      await changed();
    } catch (e) {
      notifyError(e);
    }
  };
  return (
    <FormModal
      title={named`Roles of ${userKey}`}
      opened
      onClose={onClose}
      submitLabel="Assign"
      closeOnSuccess={false}
      hideSubmit={!canWrite}
      onSubmit={async (form) => {
        unwrap(
          await api.POST("/v2/facts/{proj_id}/{env_id}/users/{user_id}/roles", {
            params: { path: { ...path, user_id: userKey } },
            body: { role: formText(form, "role"), tenant: formText(form, "tenant") },
          }),
        );
        await changed();
      }}
    >
      <QueryState query={assignments}>
        {(list) =>
          list.length === 0 ? (
            <Empty>No role assigned.</Empty>
          ) : (
            <DataTable
              label="Role assignments"
              striped={false}
              columns={["Role", "Tenant", canWrite && "Actions"]}
              rows={list}
              rowKey={(a) => a.id}
              cells={(a) => [
                a.role,
                a.resource_instance ? `${a.tenant} (${a.resource_instance})` : a.tenant,
                canWrite && !a.resource_instance && (
                  <RowButton
                    label={`Unassign ${a.role} in ${a.tenant}`}
                    danger
                    onClick={() => void unassign(a.role, a.tenant)}
                  >
                    Unassign
                  </RowButton>
                ),
              ]}
            />
          )
        }
      </QueryState>
      {canWrite && (
        <Stack gap="xs">
          <Text size="sm" fw={500}>
            Assign a role
          </Text>
          <Group grow align="flex-end">
            <Select
              label="Role"
              name="role"
              placeholder="Choose a role"
              required
              allowDeselect={false}
              data={(roles.data ?? []).map((r) => ({ value: r.key, label: r.name }))}
            />
            <Select
              label="Tenant"
              name="tenant"
              placeholder="Search tenants"
              required
              allowDeselect={false}
              searchable
              searchValue={tenantSearch}
              onSearchChange={setTenantSearch}
              filter={({ options }) => options}
              nothingFoundMessage="No tenant matches"
              data={(tenants.data ?? []).map((t) => ({ value: t.key, label: t.name }))}
            />
          </Group>
        </Stack>
      )}
    </FormModal>
  );
}
