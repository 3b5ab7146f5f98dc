import { useState } from "react";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Button, Group, Stack, Table, Text, TextInput, Title } from "@mantine/core";
import { PageFooter, SearchInput, usePagedSearch } from "../components/paging";
import { api, unwrap } from "../api/client";
import { FormModal, formText, TypedConfirmModal } from "../components/dialogs";
import { AttributesInput, parseAttributes, UserFields } from "../components/fields";
import { UserRolesModal } from "./UserRolesModal";
import { Empty, QueryState } from "../components/states";
import { useOrg, usePlace } from "../org";
import { usePlaceIds } from "../queries";
import { useMayWrite } from "../session";
import { named } from "../components/user-text";

const PER_PAGE = 20;

type EditedUser = {
  key: string;
  email?: string;
  first_name?: string;
  last_name?: string;
  attributes?: Record<string, unknown> | null;
};

/** An environment's users: one page at a time from the server, searched there too. */
export default function UsersPage() {
  const org = useOrg();
  const { proj = "", env = "" } = usePlace();
  const paged = usePagedSearch();
  const { page, query, goTo } = paged;
  const [dialog, setDialog] = useState<
    { kind: "new" } | { kind: "delete" | "roles"; key: string } | { kind: "edit"; user: EditedUser } | null
  >(null);
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

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Users
        </Title>
        {canWrite && <Button onClick={() => setDialog({ kind: "new" })}>New user</Button>}
      </Group>
      <SearchInput label="Search users" placeholder="key, e-mail or name" paged={paged} />
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
                      <Table.Td>
                        <bdi>{user.first_name}</bdi> <bdi>{user.last_name}</bdi>
                      </Table.Td>
                      <Table.Td>
                        {user.roles.map((r) => `${r.role}${r.tenant ? ` @ ${r.tenant}` : ""}`).join(", ")}
                      </Table.Td>
                      <Table.Td>
                        <Group gap="xs" wrap="nowrap">
                          <Button
                            size="compact-xs"
                            variant="subtle"
                            aria-label={`Roles of ${user.key}`}
                            onClick={() => setDialog({ kind: "roles", key: user.key })}
                          >
                            Roles
                          </Button>
                          {canWrite && (
                            <>
                              <Button
                                size="compact-xs"
                                variant="subtle"
                                aria-label={`Edit ${user.key}`}
                                onClick={() => setDialog({ kind: "edit", user })}
                              >
                                Edit
                              </Button>
                              <Button
                                size="compact-xs"
                                variant="subtle"
                                color="red"
                                aria-label={`Delete ${user.key}`}
                                onClick={() => setDialog({ kind: "delete", key: user.key })}
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
                count={`${result.total_count} users`}
                total={result.page_count}
                page={page}
                onChange={(next) => goTo(next)}
              />
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
        <UserFields />
        <AttributesInput />
      </FormModal>

      {dialog?.kind === "edit" && (
        <FormModal
          title={named`Edit user ${dialog.user.key}`}
          opened
          onClose={() => setDialog(null)}
          submitLabel="Save"
          onSubmit={async (form) => {
            const attributes = parseAttributes(formText(form, "attributes"));
            const email = formText(form, "email");
            unwrap(
              await api.PATCH("/v2/facts/{proj_id}/{env_id}/users/{user_id}", {
                params: { path: { ...path, user_id: dialog.user.key } },
                body: {
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
          <UserFields user={dialog.user} />
          <AttributesInput value={dialog.user.attributes} />
        </FormModal>
      )}

      {dialog?.kind === "roles" && (
        <UserRolesModal
          userKey={dialog.key}
          canWrite={canWrite}
          onClose={() => setDialog(null)}
          onChanged={refresh}
        />
      )}

      {dialog?.kind === "delete" && (
        <TypedConfirmModal
          title={named`Delete user ${dialog.key}`}
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
