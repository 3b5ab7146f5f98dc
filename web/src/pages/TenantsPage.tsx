import { useState } from "react";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Button, Group, Modal, Stack, Table, Text, TextInput, Textarea, Title } from "@mantine/core";
import { PageFooter, Pages, SearchInput, usePagedSearch } from "../components/paging";
import { api, unwrap } from "../api/client";
import { FormModal, formText, TypedConfirmModal } from "../components/dialogs";
import { asPage, AttributesInput, parseAttributes } from "../components/fields";
import { Empty, QueryState } from "../components/states";
import { useOrg, usePlace } from "../org";
import { usePlaceIds } from "../queries";
import { useMayWrite } from "../session";
import { named } from "../components/user-text";

const PER_PAGE = 20;

type Tenant = {
  key: string;
  name: string;
  description?: string;
  attributes?: Record<string, unknown> | null;
};

/** An environment's tenants: one page at a time from the server, searched there; create, edit, delete. */
export default function TenantsPage() {
  const org = useOrg();
  const { proj = "", env = "" } = usePlace();
  const paged = usePagedSearch();
  const { page, query, goTo } = paged;
  const [dialog, setDialog] = useState<
    { kind: "new" } | { kind: "edit" | "delete" | "users"; tenant: Tenant } | null
  >(null);
  const canWrite = useMayWrite(usePlaceIds(proj, env));
  const queryClient = useQueryClient();
  const path = { proj_id: proj, env_id: env };
  const tenants = useQuery({
    queryKey: [org.id, proj, env, "tenants", query, page],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      asPage(
        unwrap(
          await api.GET("/v2/facts/{proj_id}/{env_id}/tenants", {
            params: {
              path,
              query: { page, per_page: PER_PAGE, include_total_count: true, ...(query && { search: query }) },
            },
          }),
        ),
      ),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: [org.id, proj, env, "tenants"] });
  const body = (form: FormData) => ({
    name: formText(form, "name"),
    description: formText(form, "description"),
    attributes: parseAttributes(formText(form, "attributes")),
  });

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Tenants
        </Title>
        {canWrite && <Button onClick={() => setDialog({ kind: "new" })}>New tenant</Button>}
      </Group>
      <SearchInput label="Search tenants" placeholder="key or name" paged={paged} />
      <QueryState query={tenants}>
        {(result) =>
          result.data.length === 0 ? (
            <Empty>{query ? `No tenant matches “${query}”.` : "No tenant in this environment yet."}</Empty>
          ) : (
            <>
              <Table striped>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Key</Table.Th>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Description</Table.Th>
                    <Table.Th>Actions</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {result.data.map((tenant) => (
                    <Table.Tr key={tenant.id}>
                      <Table.Td>
                        <Text ff="monospace" size="sm">
                          {tenant.key}
                        </Text>
                      </Table.Td>
                      <Table.Td>{tenant.name}</Table.Td>
                      <Table.Td>{tenant.description ?? ""}</Table.Td>
                      <Table.Td>
                        <Group gap="xs" wrap="nowrap">
                          <Button
                            size="compact-xs"
                            variant="subtle"
                            aria-label={`Users of ${tenant.key}`}
                            onClick={() => setDialog({ kind: "users", tenant })}
                          >
                            Users
                          </Button>
                          {canWrite && (
                            <>
                              <Button
                                size="compact-xs"
                                variant="subtle"
                                aria-label={`Edit ${tenant.key}`}
                                onClick={() => setDialog({ kind: "edit", tenant })}
                              >
                                Edit
                              </Button>
                              <Button
                                size="compact-xs"
                                variant="subtle"
                                color="red"
                                aria-label={`Delete ${tenant.key}`}
                                onClick={() => setDialog({ kind: "delete", tenant })}
                              >
                                Delete
                              </Button>
                            </>
                          )}
                        </Group>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
              <PageFooter
                count={`${result.total_count} tenants`}
                total={result.page_count}
                page={page}
                onChange={(next) => goTo(next)}
              />
            </>
          )
        }
      </QueryState>

      <FormModal
        title="New tenant"
        opened={dialog?.kind === "new"}
        onClose={() => setDialog(null)}
        submitLabel="Create"
        onSubmit={async (form) => {
          unwrap(
            await api.POST("/v2/facts/{proj_id}/{env_id}/tenants", {
              params: { path },
              body: { key: formText(form, "key"), ...body(form) },
            }),
          );
          await refresh();
        }}
      >
        <TextInput label="Key" name="key" required data-autofocus />
        <TextInput label="Name" name="name" required />
        <Textarea label="Description" name="description" autosize />
        <AttributesInput />
      </FormModal>

      {dialog?.kind === "edit" && (
        <FormModal
          title={named`Edit tenant ${dialog.tenant.key}`}
          opened
          onClose={() => setDialog(null)}
          submitLabel="Save"
          onSubmit={async (form) => {
            unwrap(
              await api.PATCH("/v2/facts/{proj_id}/{env_id}/tenants/{tenant_id}", {
                params: { path: { ...path, tenant_id: dialog.tenant.key } },
                body: body(form),
              }),
            );
            await refresh();
          }}
        >
          <TextInput label="Name" name="name" required defaultValue={dialog.tenant.name} data-autofocus />
          <Textarea
            label="Description"
            name="description"
            autosize
            defaultValue={dialog.tenant.description ?? ""}
          />
          <AttributesInput value={dialog.tenant.attributes} />
        </FormModal>
      )}

      {dialog?.kind === "users" && (
        <TenantUsersModal tenant={dialog.tenant} onClose={() => setDialog(null)} />
      )}

      {dialog?.kind === "delete" && (
        <TypedConfirmModal
          title={named`Delete tenant ${dialog.tenant.key}`}
          opened
          onClose={() => setDialog(null)}
          confirmText={dialog.tenant.key}
          consequence="Deletes the tenant and every role assigned in it."
          onConfirm={async () => {
            unwrap(
              await api.DELETE("/v2/facts/{proj_id}/{env_id}/tenants/{tenant_id}", {
                params: { path: { ...path, tenant_id: dialog.tenant.key } },
              }),
            );
            await refresh();
          }}
        />
      )}
    </Stack>
  );
}

/** The users of a tenant (those with a role in it), one page at a time. */
function TenantUsersModal({ tenant, onClose }: { tenant: Tenant; onClose: () => void }) {
  const org = useOrg();
  const { proj = "", env = "" } = usePlace();
  const [page, setPage] = useState(1);
  const users = useQuery({
    queryKey: [org.id, proj, env, "tenants", tenant.key, "users", page],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/facts/{proj_id}/{env_id}/tenants/{tenant_id}/users", {
          params: {
            path: { proj_id: proj, env_id: env, tenant_id: tenant.key },
            query: { page, per_page: PER_PAGE },
          },
        }),
      ),
  });
  return (
    <Modal opened onClose={onClose} title={named`Users of ${tenant.name}`} centered size="lg">
      <QueryState query={users}>
        {(result) =>
          result.data.length === 0 ? (
            <Empty>No user has a role in this tenant.</Empty>
          ) : (
            <Stack>
              <Table aria-label={`Users of ${tenant.key}`}>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Key</Table.Th>
                    <Table.Th>E-mail</Table.Th>
                    <Table.Th>Roles here</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {result.data.map((user) => (
                    <Table.Tr key={user.id}>
                      <Table.Td>{user.key}</Table.Td>
                      <Table.Td>{user.email ?? ""}</Table.Td>
                      <Table.Td>
                        {user.roles
                          .filter((r) => r.tenant === tenant.key)
                          .map((r) => r.role)
                          .join(", ")}
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
              <Pages total={result.page_count} page={page} onChange={setPage} />
            </Stack>
          )
        }
      </QueryState>
    </Modal>
  );
}
