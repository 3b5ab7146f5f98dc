import { useState } from "react";
import { useSearchParams } from "react-router";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Button, Select, Stack, Text, TextInput } from "@mantine/core";
import { api, unwrap } from "../api/client";
import { FormModal, formText, TypedConfirmModal } from "../components/dialogs";
import { asPage, AttributesInput, parseAttributes } from "../components/fields";
import { SearchInput, usePagedSearch } from "../components/paging";
import { PagedTable, PageHead, RowActions, RowButton } from "../components/tables";
import { jsonText, named } from "../components/user-text";
import { useEnvPath } from "../queries";
import { InstanceDetail } from "./InstanceDetail";
import { TuplesSection } from "./TuplesSection";
import { KeyInput } from "../components/key-fields";

const PER_PAGE = 20;

type Path = { proj_id: string; env_id: string };

function useResourceTypes(path: Path, base: unknown[]) {
  return useQuery({
    queryKey: [...base, "resources-all"],
    queryFn: async () =>
      asPage(
        unwrap(
          await api.GET("/v2/schema/{proj_id}/{env_id}/resources", {
            params: { path, query: { per_page: 100 } },
          }),
        ),
      ).data,
  });
}

/** Resource instances (paged, searched on the server), relationship tuples, and one instance's neighbourhood. */
export default function InstancesPage() {
  const { path, base, canWrite } = useEnvPath();
  const paged = usePagedSearch();
  const { page, query, goTo } = paged;
  const [params, setParams] = useSearchParams();
  const selected = params.get("instance");
  const [dialog, setDialog] = useState<{ kind: "new" } | { kind: "delete"; name: string } | null>(null);
  const queryClient = useQueryClient();
  const resources = useResourceTypes(path, base);
  const instances = useQuery({
    queryKey: [...base, "instances", query, page],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      asPage(
        unwrap(
          await api.GET("/v2/facts/{proj_id}/{env_id}/resource_instances", {
            params: {
              path,
              query: {
                page,
                per_page: PER_PAGE,
                include_total_count: true,
                ...(query && { search: [query] }),
              },
            },
          }),
        ),
      ),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: base });
  const open = (name: string | null) => {
    const next = new URLSearchParams(params);
    if (name) next.set("instance", name);
    else next.delete("instance");
    setParams(next);
  };

  return (
    <Stack>
      <PageHead
        title="Instances and relationships"
        action={canWrite && <Button onClick={() => setDialog({ kind: "new" })}>New instance</Button>}
      />
      <SearchInput label="Search instances" placeholder="instance key" paged={paged} />
      <PagedTable
        query={instances}
        empty={query ? `No instance matches “${query}”.` : "No resource instance in this environment yet."}
        noun="instance"
        page={page}
        onPage={goTo}
        label="Instances"
        columns={["Instance", "Tenant", "Attributes", "Actions"]}
        rowKey={(i) => i.id}
        cells={(i) => {
          const name = `${i.resource}:${i.key}`;
          return [
            <Text ff="monospace" size="sm">
              {name}
            </Text>,
            i.tenant,
            <Text ff="monospace" size="xs">
              {jsonText(i.attributes ?? {})}
            </Text>,
            <RowActions
              name={name}
              onDelete={canWrite ? () => setDialog({ kind: "delete", name }) : undefined}
            >
              <RowButton label={`Open ${name}`} onClick={() => open(name)}>
                Open
              </RowButton>
            </RowActions>,
          ];
        }}
      />

      {selected && <InstanceDetail name={selected} onClose={() => open(null)} />}
      <TuplesSection />

      <FormModal
        title="New instance"
        opened={dialog?.kind === "new"}
        onClose={() => setDialog(null)}
        submitLabel="Create"
        onSubmit={async (form) => {
          unwrap(
            await api.POST("/v2/facts/{proj_id}/{env_id}/resource_instances", {
              params: { path },
              body: {
                resource: formText(form, "resource"),
                key: formText(form, "key"),
                tenant: formText(form, "tenant") || "default",
                attributes: parseAttributes(formText(form, "attributes")),
              },
            }),
          );
          await refresh();
        }}
      >
        <Select
          label="Resource type"
          name="resource"
          required
          data={(resources.data ?? []).map((r) => r.key)}
          data-autofocus
        />
        <KeyInput autoFocus={false} />
        <TextInput label="Tenant" name="tenant" placeholder="default" />
        <AttributesInput />
      </FormModal>

      {dialog?.kind === "delete" && (
        <TypedConfirmModal
          title={named`Delete instance ${dialog.name}`}
          opened
          onClose={() => setDialog(null)}
          confirmText={dialog.name}
          consequence="Deletes the instance, its relationship tuples and the roles assigned on it."
          onConfirm={async () => {
            unwrap(
              await api.DELETE("/v2/facts/{proj_id}/{env_id}/resource_instances/{instance_id}", {
                params: { path: { ...path, instance_id: dialog.name } },
              }),
            );
            if (selected === dialog.name) open(null);
            await refresh();
          }}
        />
      )}
    </Stack>
  );
}
