import { useState } from "react";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Button, Group, Stack, TextInput, Title } from "@mantine/core";
import { api, unwrap } from "../api/client";
import { FormModal, formText } from "../components/dialogs";
import { asPage } from "../components/fields";
import { PagedTable, RowButton } from "../components/tables";
import { useEnvPath } from "../queries";

const PER_PAGE = 20;

type Tuple = { subject: string; relation: string; object: string; tenant: string };

/** Relationship tuples, filtered by subject, relation or object; create and delete. */
export function TuplesSection() {
  const { path, base, canWrite } = useEnvPath();
  const queryClient = useQueryClient();
  const [filter, setFilter] = useState({ subject: "", relation: "", object: "" });
  const [page, setPage] = useState(1);
  const [creating, setCreating] = useState(false);
  const tuples = useQuery({
    queryKey: [...base, "tuples", filter, page],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      asPage(
        unwrap(
          await api.GET("/v2/facts/{proj_id}/{env_id}/relationship_tuples", {
            params: {
              path,
              query: {
                page,
                per_page: PER_PAGE,
                include_total_count: true,
                ...(filter.subject && { subject: filter.subject }),
                ...(filter.relation && { relation: filter.relation }),
                ...(filter.object && { object: filter.object }),
              },
            },
          }),
        ),
      ),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: base });
  const remove = async (t: Tuple) => {
    unwrap(
      await api.DELETE("/v2/facts/{proj_id}/{env_id}/relationship_tuples", {
        params: { path },
        body: { subject: t.subject, relation: t.relation, object: t.object },
      }),
    );
    await refresh();
  };
  const field = (name: keyof typeof filter, label: string) => (
    <TextInput
      label={label}
      placeholder="type:key"
      value={filter[name]}
      onChange={(e) => {
        setFilter({ ...filter, [name]: e.currentTarget.value.trim() });
        setPage(1);
      }}
    />
  );
  return (
    <Stack gap="sm">
      <Group justify="space-between">
        <Title order={2} size="h3">
          Relationship tuples
        </Title>
        {canWrite && <Button onClick={() => setCreating(true)}>New tuple</Button>}
      </Group>
      <Group grow>
        {field("subject", "Subject")}
        {field("relation", "Relation")}
        {field("object", "Object")}
      </Group>
      <PagedTable
        query={tuples}
        empty="No tuple matches."
        noun="tuple"
        page={page}
        onPage={setPage}
        label="Tuples"
        columns={["Subject", "Relation", "Object", "Tenant", canWrite && "Actions"]}
        rowKey={(t) => t.id}
        cells={(t) => [
          t.subject,
          t.relation,
          t.object,
          t.tenant,
          canWrite && (
            <RowButton
              label={`Delete tuple ${t.subject} ${t.relation} ${t.object}`}
              danger
              onClick={() => void remove(t)}
            >
              Delete
            </RowButton>
          ),
        ]}
      />
      <FormModal
        title="New relationship tuple"
        opened={creating}
        onClose={() => setCreating(false)}
        submitLabel="Create"
        onSubmit={async (form) => {
          unwrap(
            await api.POST("/v2/facts/{proj_id}/{env_id}/relationship_tuples", {
              params: { path },
              body: {
                subject: formText(form, "subject"),
                relation: formText(form, "relation"),
                object: formText(form, "object"),
                ...(formText(form, "tenant") && { tenant: formText(form, "tenant") }),
              },
            }),
          );
          await refresh();
        }}
      >
        <TextInput label="Subject" name="subject" placeholder="type:key" required data-autofocus />
        <TextInput label="Relation" name="relation" required />
        <TextInput label="Object" name="object" placeholder="type:key" required />
        <TextInput label="Tenant" name="tenant" placeholder="the instances' tenant" />
      </FormModal>
    </Stack>
  );
}
