import { useState } from "react";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Button, Modal, Stack, Text, TextInput, Textarea } from "@mantine/core";
import { Pages, SearchInput, usePagedSearch } from "../components/paging";
import { DataTable, PagedTable, PageHead, RowActions, RowButton } from "../components/tables";
import { api, unwrap } from "../api/client";
import { FormModal, formText, TypedConfirmModal } from "../components/dialogs";
import { asPage, AttributesInput, parseAttributes, rolesText } from "../components/fields";
import { Empty, QueryState } from "../components/states";
import { useEnvPath } from "../queries";
import { named } from "../components/user-text";
import { NameKeyFields } from "../components/key-fields";

const PER_PAGE = 20;

type Tenant = {
  key: string;
  name: string;
  description?: string;
  attributes?: Record<string, unknown> | null;
};

/** An environment's tenants: one page at a time from the server, searched there; create, edit, delete. */
export default function TenantsPage() {
  const { path, base, canWrite } = useEnvPath();
  const paged = usePagedSearch();
  const { page, query, goTo } = paged;
  const [dialog, setDialog] = useState<
    { kind: "new" } | { kind: "edit" | "delete" | "users"; tenant: Tenant } | null
  >(null);
  const queryClient = useQueryClient();
  const tenants = useQuery({
    queryKey: [...base, "tenants", query, page],
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
  const refresh = () => queryClient.invalidateQueries({ queryKey: [...base, "tenants"] });
  const body = (form: FormData) => ({
    name: formText(form, "name"),
    description: formText(form, "description"),
    attributes: parseAttributes(formText(form, "attributes")),
  });

  return (
    <Stack>
      <PageHead
        title="Tenants"
        action={canWrite && <Button onClick={() => setDialog({ kind: "new" })}>New tenant</Button>}
      />
      <SearchInput label="Search tenants" placeholder="key or name" paged={paged} />
      <PagedTable
        query={tenants}
        empty={query ? `No tenant matches “${query}”.` : "No tenant in this environment yet."}
        noun="tenant"
        page={page}
        onPage={goTo}
        columns={["Key", "Name", "Description", "Actions"]}
        rowKey={(tenant) => tenant.id}
        cells={(tenant) => [
          <Text ff="monospace" size="sm">
            {tenant.key}
          </Text>,
          tenant.name,
          tenant.description ?? "",
          <RowActions
            name={tenant.key}
            onEdit={canWrite ? () => setDialog({ kind: "edit", tenant }) : undefined}
            onDelete={canWrite ? () => setDialog({ kind: "delete", tenant }) : undefined}
          >
            <RowButton label={`Users of ${tenant.key}`} onClick={() => setDialog({ kind: "users", tenant })}>
              Users
            </RowButton>
          </RowActions>,
        ]}
      />

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
        <NameKeyFields />
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
  const { path, base } = useEnvPath();
  const [page, setPage] = useState(1);
  const users = useQuery({
    queryKey: [...base, "tenants", tenant.key, "users", page],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/facts/{proj_id}/{env_id}/tenants/{tenant_id}/users", {
          params: {
            path: { ...path, tenant_id: tenant.key },
            query: { page, per_page: PER_PAGE, include_resource_instance_roles: true },
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
              <DataTable
                label={`Users of ${tenant.key}`}
                striped={false}
                columns={["Key", "E-mail", "Roles here"]}
                rows={result.data}
                rowKey={(user) => user.id}
                cells={(user) => [user.key, user.email ?? "", rolesText(user, tenant.key)]}
              />
              <Pages total={result.page_count} page={page} onChange={setPage} />
            </Stack>
          )
        }
      </QueryState>
    </Modal>
  );
}
