import { useState } from "react";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Button, Stack, Text } from "@mantine/core";
import { SearchInput, usePagedSearch } from "../components/paging";
import { PagedTable, PageHead, RowActions, RowButton } from "../components/tables";
import { api, unwrap } from "../api/client";
import { FormModal, formText, TypedConfirmModal } from "../components/dialogs";
import { AttributesInput, parseAttributes, rolesText, UserFields } from "../components/fields";
import { UserRolesModal } from "./UserRolesModal";
import { useEnvPath } from "../queries";
import { named } from "../components/user-text";
import { KeyInput } from "../components/key-fields";

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
  const { path, base, canWrite } = useEnvPath();
  const paged = usePagedSearch();
  const { page, query, goTo } = paged;
  const [dialog, setDialog] = useState<
    { kind: "new" } | { kind: "delete" | "roles"; key: string } | { kind: "edit"; user: EditedUser } | null
  >(null);
  const queryClient = useQueryClient();
  const users = useQuery({
    queryKey: [...base, "users", query, page],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/facts/{proj_id}/{env_id}/users", {
          params: {
            path,
            query: {
              page,
              per_page: PER_PAGE,
              include_resource_instance_roles: true,
              ...(query && { search: query }),
            },
          },
        }),
      ),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: [...base, "users"] });

  return (
    <Stack>
      <PageHead
        title="Users"
        action={canWrite && <Button onClick={() => setDialog({ kind: "new" })}>New user</Button>}
      />
      <SearchInput label="Search users" placeholder="key, e-mail or name" paged={paged} />
      <PagedTable
        query={users}
        empty={query ? `No user matches “${query}”.` : "No user in this environment yet."}
        noun="user"
        page={page}
        onPage={goTo}
        columns={["Key", "E-mail", "Name", "Roles", "Actions"]}
        rowKey={(user) => user.id}
        cells={(user) => [
          <Text ff="monospace" size="sm">
            {user.key}
          </Text>,
          user.email ?? "",
          <>
            <bdi>{user.first_name}</bdi> <bdi>{user.last_name}</bdi>
          </>,
          rolesText(user),
          <RowActions
            name={user.key}
            onEdit={canWrite ? () => setDialog({ kind: "edit", user }) : undefined}
            onDelete={canWrite ? () => setDialog({ kind: "delete", key: user.key }) : undefined}
          >
            <RowButton
              label={`Roles of ${user.key}`}
              onClick={() => setDialog({ kind: "roles", key: user.key })}
            >
              Roles
            </RowButton>
          </RowActions>,
        ]}
      />

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
        <KeyInput />
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
