import { useState } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Badge, Button, Group, Modal, Select, Stack, Text, TextInput, Title } from "@mantine/core";
import { useScopeFields, type Level } from "../components/scope-fields";
import { api, unwrap } from "../api/client";
import { CopyBlock } from "../components/CopyBlock";
import { FormModal, formText } from "../components/dialogs";
import { Empty, QueryState } from "../components/states";
import { useOrg } from "../org";
import { useMayWrite } from "../session";
import { notifyError } from "../notify";
import { named } from "../components/user-text";
import { DataTable, PageHead, RowButton } from "../components/tables";

type Access = "admin" | "write" | "read" | "no_access";
type Grant = {
  object_type: Level;
  access_level: Access;
  organization_id: string;
  project_id?: string;
  environment_id?: string;
  project_key?: string;
  environment_key?: string;
};
type Member = { id: string; email: string; name?: string; grants: Grant[] };

const ACCESS: Access[] = ["admin", "write", "read", "no_access"];

/** Where a grant applies, in words. */
export const grantPlace = (g: Grant) =>
  g.object_type === "org"
    ? "organization"
    : [g.project_key ?? g.project_id, g.environment_key ?? g.environment_id].filter(Boolean).join(" / ");

/** A date and time in the browser's locale, with its zone: "Dec 5, 2026, 10:02 UTC". */
const dateText = (at: string) =>
  new Date(at).toLocaleString(undefined, {
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    timeZoneName: "short",
  });

const inviteLink = (code: string) => `${window.location.origin}/invite/${encodeURIComponent(code)}`;

/** Settings → Members: the organization's members and their grants, and the invites waiting for an answer. */
export default function MembersPage() {
  const org = useOrg();
  const canWrite = useMayWrite({ admin: true });
  const queryClient = useQueryClient();
  const [inviting, setInviting] = useState(false);
  const [link, setLink] = useState<{ email: string; url: string; expires?: string } | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [removing, setRemoving] = useState<Member | null>(null);
  const members = useQuery({
    queryKey: [org.id, "members"],
    queryFn: async () => unwrap(await api.GET("/v2/members", { params: { query: { per_page: 100 } } })),
  });
  const invites = useQuery({
    queryKey: [org.id, "invites"],
    enabled: canWrite,
    queryFn: async () =>
      unwrap(
        await api.GET("/v2/orgs/{org_id}/invites", {
          params: { path: { org_id: org.id }, query: { per_page: 100 } },
        }),
      ),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: [org.id] });
  const cancelInvite = async (id: string) => {
    try {
      unwrap(
        await api.DELETE("/v2/orgs/{org_id}/invites/{invite_id}", {
          params: { path: { org_id: org.id, invite_id: id } },
        }),
      );
      await refresh();
    } catch (e) {
      notifyError(e);
    }
  };
  const editedMember = members.data?.find((m) => m.id === editing);

  return (
    <Stack>
      <PageHead
        title="Members"
        action={canWrite && <Button onClick={() => setInviting(true)}>Invite member</Button>}
      />
      <QueryState query={members}>
        {(list) => (
          <DataTable
            columns={["E-mail", "Name", "Access", canWrite && "Actions"]}
            rows={list}
            rowKey={(member) => member.id}
            cells={(member) => [
              member.email,
              member.name ?? "",
              <Group gap={4}>
                {member.grants.map((g) => (
                  <Badge key={`${g.object_type}:${grantPlace(g)}`} variant="light" tt="none">
                    {grantPlace(g)}: {g.access_level}
                  </Badge>
                ))}
              </Group>,
              canWrite && (
                <Group gap="xs" wrap="nowrap">
                  <RowButton label={`Change access of ${member.email}`} onClick={() => setEditing(member.id)}>
                    Change access
                  </RowButton>
                  <RowButton label={`Remove ${member.email}`} danger onClick={() => setRemoving(member)}>
                    Remove
                  </RowButton>
                </Group>
              ),
            ]}
          />
        )}
      </QueryState>

      {canWrite && (
        <>
          <Title order={2} size="h3">
            Invites
          </Title>
          <QueryState query={invites}>
            {(list) =>
              list.length === 0 ? (
                <Empty>No invite yet.</Empty>
              ) : (
                <DataTable
                  columns={["E-mail", "Role", "Status", "Expires", "Actions"]}
                  rows={list}
                  rowKey={(invite) => invite.id}
                  cells={(invite) => [
                    invite.email,
                    invite.role,
                    `${invite.status}${invite.failed_reason ? ` (${invite.failed_reason})` : ""}`,
                    invite.expires_at ? dateText(invite.expires_at) : "",
                    invite.status === "pending" && (
                      <Group gap="xs" wrap="nowrap">
                        <RowButton
                          label={`Link of the invite for ${invite.email}`}
                          onClick={() =>
                            setLink({
                              email: invite.email,
                              url: inviteLink(invite.invite_code),
                              expires: invite.expires_at,
                            })
                          }
                        >
                          Link
                        </RowButton>
                        <RowButton
                          label={`Cancel the invite for ${invite.email}`}
                          danger
                          onClick={() => void cancelInvite(invite.id)}
                        >
                          Cancel
                        </RowButton>
                      </Group>
                    ),
                  ]}
                />
              )
            }
          </QueryState>
        </>
      )}

      <FormModal
        title="Invite a member"
        opened={inviting}
        onClose={() => setInviting(false)}
        submitLabel="Invite"
        onSubmit={async (form) => {
          const email = formText(form, "email");
          const result = unwrap(
            await api.POST("/v2/orgs/{org_id}/invites", {
              params: { path: { org_id: org.id } },
              body: [{ email, role: formText(form, "role") as Access }],
            }),
          );
          const failed = result.failed[0];
          if (failed) throw new Error(`${failed.email}: ${failed.reason}`);
          const invite = result.success[0];
          await refresh();
          if (invite) setLink({ email, url: inviteLink(invite.invite_code), expires: invite.expires_at });
        }}
      >
        <TextInput label="E-mail" name="email" type="email" required data-autofocus />
        <Select
          label="Access"
          name="role"
          description="read: sees everything, changes nothing; raise it later under Change access"
          defaultValue="read"
          allowDeselect={false}
          data={ACCESS}
        />
      </FormModal>

      {link && (
        <Modal
          opened
          onClose={() => setLink(null)}
          title={named`Invite link for ${link.email}`}
          centered
          size="lg"
        >
          <Stack>
            <Text size="sm">
              Send this link to {link.email}: it works once, until{" "}
              {link.expires ? dateText(link.expires) : "it expires"}. Whoever opens it chooses a password and
              joins the organization.
            </Text>
            <CopyBlock
              label="Invite link"
              value={link.url}
              copyLabel="Copy the link"
              onClose={() => setLink(null)}
            />
          </Stack>
        </Modal>
      )}

      {editedMember && (
        <GrantsModal member={editedMember} onClose={() => setEditing(null)} onChanged={refresh} />
      )}

      {removing && (
        <FormModal
          title={named`Remove ${removing.email}`}
          opened
          onClose={() => setRemoving(null)}
          submitLabel="Remove"
          danger
          onSubmit={async () => {
            unwrap(
              await api.DELETE("/v2/members/{member_id}", { params: { path: { member_id: removing.id } } }),
            );
            await refresh();
          }}
        >
          <Text size="sm">
            {removing.email} loses every grant in this organization and is logged out of it at once.
          </Text>
        </FormModal>
      )}
    </Stack>
  );
}

/** A member's grants: each can be taken away; a new one replaces the grant on the same object. */
function GrantsModal({
  member,
  onClose,
  onChanged,
}: {
  member: Member;
  onClose: () => void;
  onChanged: () => Promise<unknown>;
}) {
  const org = useOrg();
  const {
    level,
    proj,
    fields: scopeFields,
  } = useScopeFields("org", "Grant on", {
    org: "The organization",
    project: "A project",
    env: "An environment",
  });
  const revoke = async (grant: Grant) => {
    try {
      unwrap(
        await api.DELETE("/v2/members", {
          body: {
            id: member.id,
            permissions: [
              {
                organization_id: grant.organization_id,
                object_type: grant.object_type,
                access_level: grant.access_level,
                ...(grant.project_id && { project_id: grant.project_id }),
                ...(grant.environment_id && { environment_id: grant.environment_id }),
              },
            ],
          },
        }),
      );
      await onChanged();
    } catch (e) {
      notifyError(e);
    }
  };
  return (
    <FormModal
      title={named`Access of ${member.email}`}
      opened
      onClose={onClose}
      submitLabel="Grant"
      closeOnSuccess={false}
      onSubmit={async (form) => {
        unwrap(
          await api.POST("/v2/members", {
            body: {
              id: member.id,
              permissions: [
                {
                  organization_id: org.id,
                  object_type: level,
                  access_level: formText(form, "access_level") as Access,
                  ...(level !== "org" && proj && { project_id: proj }),
                  ...(level === "env" && { environment_id: formText(form, "environment") }),
                },
              ],
            },
          }),
        );
        await onChanged();
      }}
    >
      <Stack gap="xs" aria-label="Grants">
        {member.grants.length === 0 && <Text size="sm">No grant.</Text>}
        {member.grants.map((g) => (
          <Group key={`${g.object_type}:${grantPlace(g)}`} justify="space-between">
            <Text size="sm">
              {grantPlace(g)}: {g.access_level}
            </Text>
            <Button
              size="compact-xs"
              variant="subtle"
              color="red"
              aria-label={`Take away ${grantPlace(g)}: ${g.access_level}`}
              onClick={() => void revoke(g)}
            >
              Take away
            </Button>
          </Group>
        ))}
      </Stack>
      {scopeFields}
      <Select label="Access" name="access_level" defaultValue="read" allowDeselect={false} data={ACCESS} />
    </FormModal>
  );
}
