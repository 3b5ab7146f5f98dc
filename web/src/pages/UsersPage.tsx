import { useState } from "react";
import { useSearchParams } from "react-router";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Button, Group, JsonInput, Pagination, Stack, Table, Text, TextInput, Title } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { api, unwrap } from "../api/client";
import { FormModal, formText, TypedConfirmModal } from "../components/dialogs";
import { Empty, QueryState } from "../components/states";
import { useOrg, usePlace } from "../org";
import { usePlaceIds } from "../queries";
import { useMayWrite } from "../session";

const PER_PAGE = 20;

/** Parses the attributes editor's text: a JSON object, or an error saying why not. */
export function parseAttributes(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  const value: unknown = JSON.parse(text);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error("attributes must be a JSON object");
  }
  return value as Record<string, unknown>;
}

/** An environment's users: one page at a time from the server, searched there too. */
export default function UsersPage() {
  const org = useOrg();
  const { proj = "", env = "" } = usePlace();
  const [params, setParams] = useSearchParams();
  const page = Math.max(1, Number(params.get("page") ?? "1") || 1);
  const [search, setSearch] = useState(params.get("q") ?? "");
  const [query] = useDebouncedValue(search.trim(), 300);
  const [dialog, setDialog] = useState<{ kind: "new" } | { kind: "delete"; key: string } | null>(null);
  const canWrite = useMayWrite(usePlaceIds(proj, env));
  const queryClient = useQueryClient();
  const path = { proj_id: proj, env_id: env };
  const users = useQuery({
    queryKey: [org.id, proj, env, "users", query, page],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/facts/{proj_id}/{env_id}/users", {
          params: { path, query: { page, per_page: PER_PAGE, ...(query && { search: query }) } },
        }),
      ),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: [org.id, proj, env, "users"] });
  const goTo = (next: number, q = query) => setParams(q ? { page: String(next), q } : { page: String(next) });

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Users
        </Title>
        {canWrite && <Button onClick={() => setDialog({ kind: "new" })}>New user</Button>}
      </Group>
      <TextInput
        label="Search users"
        placeholder="key, e-mail or name"
        value={search}
        onChange={(e) => {
          setSearch(e.currentTarget.value);
          if (page !== 1) goTo(1, e.currentTarget.value.trim());
        }}
      />
      <QueryState query={users}>
        {(result) =>
          result.data.length === 0 ? (
            <Empty>{query ? `No user matches “${query}”.` : "No user in this environment yet."}</Empty>
          ) : (
            <>
              <Table striped>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Key</Table.Th>
                    <Table.Th>E-mail</Table.Th>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Roles</Table.Th>
                    <Table.Th>Actions</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {result.data.map((user) => (
                    <Table.Tr key={user.id}>
                      <Table.Td>
                        <Text ff="monospace" size="sm">
                          {user.key}
                        </Text>
                      </Table.Td>
                      <Table.Td>{user.email ?? ""}</Table.Td>
                      <Table.Td>{[user.first_name, user.last_name].filter(Boolean).join(" ")}</Table.Td>
                      <Table.Td>
                        {user.roles.map((r) => `${r.role}${r.tenant ? ` @ ${r.tenant}` : ""}`).join(", ")}
                      </Table.Td>
                      <Table.Td>
                        {canWrite && (
                          <Button
                            size="compact-xs"
                            variant="subtle"
                            color="red"
                            aria-label={`Delete ${user.key}`}
                            onClick={() => setDialog({ kind: "delete", key: user.key })}
                          >
                            Delete
                          </Button>
                        )}
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
              <Group justify="space-between">
                <Text size="sm" c="dimmed">
                  {result.total_count} users
                </Text>
                <Pagination
                  total={result.page_count}
                  value={page}
                  onChange={(next) => goTo(next)}
                  getControlProps={(control) => ({ "aria-label": `${control} page` })}
                  getItemProps={(item) => ({ "aria-label": `Page ${item}` })}
                />
              </Group>
            </>
          )
        }
      </QueryState>

      <FormModal
        title="New user"
        opened={dialog?.kind === "new"}
        onClose={() => setDialog(null)}
        submitLabel="Create"
        onSubmit={async (form) => {
          const attributes = parseAttributes(formText(form, "attributes"));
          const email = formText(form, "email");
          unwrap(
            await api.POST("/v2/facts/{proj_id}/{env_id}/users", {
              params: { path },
              body: {
                key: formText(form, "key"),
                ...(email && { email }),
                first_name: formText(form, "first_name"),
                last_name: formText(form, "last_name"),
                attributes,
              },
            }),
          );
          await refresh();
        }}
      >
        <TextInput label="Key" name="key" required data-autofocus />
        <TextInput label="E-mail" name="email" type="email" />
        <TextInput label="First name" name="first_name" />
        <TextInput label="Last name" name="last_name" />
        <JsonInput
          label="Attributes"
          name="attributes"
          description="a JSON object"
          validationError="Not valid JSON"
          formatOnBlur
          autosize
          minRows={3}
        />
      </FormModal>

      {dialog?.kind === "delete" && (
        <TypedConfirmModal
          title={`Delete user ${dialog.key}`}
          opened
          onClose={() => setDialog(null)}
          confirmText={dialog.key}
          consequence="Deletes the user and its role assignments."
          onConfirm={async () => {
            unwrap(
              await api.DELETE("/v2/facts/{proj_id}/{env_id}/users/{user_id}", {
                params: { path: { ...path, user_id: dialog.key } },
              }),
            );
            await refresh();
          }}
        />
      )}
    </Stack>
  );
}
