import { useState } from "react";
import { Link } from "react-router";
import { useQueryClient } from "@tanstack/react-query";
import { Anchor, Badge, Button, Group, Paper, Stack, Text, TextInput, Title } from "@mantine/core";
import { api, unwrap } from "../api/client";
import { FormModal, formText, TypedConfirmModal } from "../components/dialogs";
import { Empty, QueryState } from "../components/states";
import { envPath, useOrg } from "../org";
import { useEnvironments, useProjects } from "../queries";
import { useMayWrite } from "../session";
import { CopyEnvironmentModal } from "./CopyEnvironment";
import { named } from "../components/user-text";
import { DataTable, RowButton } from "../components/tables";
import { NameKeyFields } from "../components/key-fields";

type Project = { id: string; key: string; name: string };
type Environment = { id: string; key: string; name: string };

type Dialog =
  | { kind: "new-project" }
  | { kind: "rename-project" | "delete-project" | "new-env"; project: Project }
  | { kind: "rename-env" | "delete-env" | "copy-env"; project: Project; env: Environment };

/** Projects with their environments: create, rename, delete (typed), copy an environment. */
export default function ProjectsPage() {
  const org = useOrg();
  const projects = useProjects();
  const canWrite = useMayWrite();
  const [dialog, setDialog] = useState<Dialog | null>(null);
  const queryClient = useQueryClient();
  const refresh = () => queryClient.invalidateQueries({ queryKey: [org.id, "projects"] });
  const close = () => setDialog(null);

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Projects
        </Title>
        {canWrite && <Button onClick={() => setDialog({ kind: "new-project" })}>New project</Button>}
      </Group>
      <QueryState query={projects}>
        {(list) =>
          list.length === 0 ? (
            <Empty>No project yet.</Empty>
          ) : (
            list.map((project) => <ProjectCard key={project.id} project={project} onDialog={setDialog} />)
          )
        }
      </QueryState>

      <FormModal
        title="New project"
        opened={dialog?.kind === "new-project"}
        onClose={close}
        submitLabel="Create"
        onSubmit={async (form) => {
          unwrap(
            await api.POST("/v2/projects", {
              body: { key: formText(form, "key"), name: formText(form, "name") },
            }),
          );
          await refresh();
        }}
      >
        <NameKeyFields />
      </FormModal>

      {dialog?.kind === "rename-project" && (
        <FormModal
          title={named`Rename ${dialog.project.key}`}
          opened
          onClose={close}
          submitLabel="Save"
          onSubmit={async (form) => {
            unwrap(
              await api.PATCH("/v2/projects/{proj_id}", {
                params: { path: { proj_id: dialog.project.id } },
                body: { name: formText(form, "name") },
              }),
            );
            await refresh();
          }}
        >
          <TextInput label="Name" name="name" defaultValue={dialog.project.name} required data-autofocus />
        </FormModal>
      )}

      {dialog?.kind === "delete-project" && (
        <TypedConfirmModal
          title={named`Delete project ${dialog.project.key}`}
          opened
          onClose={close}
          confirmText={dialog.project.key}
          consequence="Deletes the project, its environments and everything in them. This cannot be undone."
          onConfirm={async () => {
            unwrap(
              await api.DELETE("/v2/projects/{proj_id}", {
                params: { path: { proj_id: dialog.project.id } },
              }),
            );
            await refresh();
          }}
        />
      )}

      {dialog?.kind === "new-env" && (
        <FormModal
          title={named`New environment in ${dialog.project.key}`}
          opened
          onClose={close}
          submitLabel="Create"
          onSubmit={async (form) => {
            unwrap(
              await api.POST("/v2/projects/{proj_id}/envs", {
                params: { path: { proj_id: dialog.project.id } },
                body: { key: formText(form, "key"), name: formText(form, "name") },
              }),
            );
            await refresh();
          }}
        >
          <NameKeyFields />
        </FormModal>
      )}

      {dialog?.kind === "rename-env" && (
        <FormModal
          title={named`Rename ${dialog.project.key} / ${dialog.env.key}`}
          opened
          onClose={close}
          submitLabel="Save"
          onSubmit={async (form) => {
            unwrap(
              await api.PATCH("/v2/projects/{proj_id}/envs/{env_id}", {
                params: { path: { proj_id: dialog.project.id, env_id: dialog.env.id } },
                body: { name: formText(form, "name") },
              }),
            );
            await refresh();
          }}
        >
          <TextInput label="Name" name="name" defaultValue={dialog.env.name} required data-autofocus />
        </FormModal>
      )}

      {dialog?.kind === "delete-env" && (
        <TypedConfirmModal
          title={named`Delete environment ${dialog.project.key} / ${dialog.env.key}`}
          opened
          onClose={close}
          confirmText={dialog.env.key}
          consequence="Deletes the environment with its users, tenants, roles, resources and keys. This cannot be undone."
          onConfirm={async () => {
            unwrap(
              await api.DELETE("/v2/projects/{proj_id}/envs/{env_id}", {
                params: { path: { proj_id: dialog.project.id, env_id: dialog.env.id } },
              }),
            );
            await refresh();
          }}
        />
      )}

      {dialog?.kind === "copy-env" && (
        <CopyEnvironmentModal
          project={dialog.project}
          source={dialog.env}
          onClose={close}
          onCopied={refresh}
        />
      )}
    </Stack>
  );
}

function ProjectCard({ project, onDialog }: { project: Project; onDialog: (dialog: Dialog) => void }) {
  const org = useOrg();
  const envs = useEnvironments(project.key);
  const canWrite = useMayWrite({ projectId: project.id });
  return (
    <Paper withBorder p="md" component="section" aria-label={`Project ${project.name}`}>
      <Group justify="space-between" mb="sm">
        <Group gap="xs">
          <Title order={2} size="h4">
            {project.name}
          </Title>
          <Badge variant="light" tt="none">
            {project.key}
          </Badge>
        </Group>
        {canWrite && (
          <Group gap="xs">
            <Button size="xs" variant="default" onClick={() => onDialog({ kind: "new-env", project })}>
              New environment
            </Button>
            <Button size="xs" variant="default" onClick={() => onDialog({ kind: "rename-project", project })}>
              Rename
            </Button>
            <Button
              size="xs"
              variant="default"
              color="red"
              onClick={() => onDialog({ kind: "delete-project", project })}
            >
              Delete
            </Button>
          </Group>
        )}
      </Group>
      <QueryState query={envs}>
        {(list) =>
          list.length === 0 ? (
            <Text c="dimmed" size="sm">
              No environment yet.
            </Text>
          ) : (
            <DataTable
              columns={["Environment", "Key", canWrite && "Actions"]}
              rows={list}
              rowKey={(env) => env.id}
              cells={(env) => [
                <Anchor component={Link} to={envPath(org.key, project.key, env.key)}>
                  {env.name}
                </Anchor>,
                <Text ff="monospace" size="sm">
                  {env.key}
                </Text>,
                canWrite && (
                  <Group gap="xs">
                    <RowButton
                      label={`Rename ${env.key}`}
                      onClick={() => onDialog({ kind: "rename-env", project, env })}
                    >
                      Rename
                    </RowButton>
                    <RowButton
                      label={`Copy ${env.key}`}
                      onClick={() => onDialog({ kind: "copy-env", project, env })}
                    >
                      Copy
                    </RowButton>
                    <RowButton
                      label={`Delete ${env.key}`}
                      danger
                      onClick={() => onDialog({ kind: "delete-env", project, env })}
                    >
                      Delete
                    </RowButton>
                  </Group>
                ),
              ]}
            />
          )
        }
      </QueryState>
    </Paper>
  );
}
