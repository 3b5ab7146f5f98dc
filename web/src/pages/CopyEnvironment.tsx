import { useState } from "react";
import { Link } from "react-router";
import { useQuery } from "@tanstack/react-query";
import {
  Alert,
  Anchor,
  Button,
  Group,
  Modal,
  Progress,
  Radio,
  Select,
  Stack,
  Text,
  TextInput,
} from "@mantine/core";
import { api, unwrap } from "../api/client";
import { FormModal, formText } from "../components/dialogs";
import { ErrorState } from "../components/states";
import { envPath, useOrg } from "../org";
import { useEnvironments } from "../queries";
import { named } from "../components/user-text";
import { KeyInput } from "../components/key-fields";

type Ref = { id: string; key: string; name: string };
type Started = { projectId: string; sourceId: string; taskId: string };

/** Copies an environment (into a new or an existing one) and follows the task until success or failure. */
export function CopyEnvironmentModal({
  project,
  source,
  onClose,
  onCopied,
}: {
  project: Ref;
  source: Ref;
  onClose: () => void;
  onCopied: () => unknown;
}) {
  const [target, setTarget] = useState<"new" | "existing">("new");
  const [started, setStarted] = useState<Started | null>(null);
  const envs = useEnvironments(project.key);
  if (started) return <CopyTask started={started} project={project} onClose={onClose} onCopied={onCopied} />;
  const others = (envs.data ?? []).filter((e) => e.id !== source.id);
  return (
    <FormModal
      title={named`Copy ${project.key} / ${source.key}`}
      opened
      onClose={onClose}
      submitLabel="Copy"
      closeOnSuccess={false}
      onSubmit={async (form) => {
        const targetEnv =
          target === "new"
            ? { new: { key: formText(form, "key"), name: formText(form, "name") } }
            : { existing: formText(form, "existing") };
        const task = unwrap(
          await api.POST("/v2/projects/{proj_id}/envs/{env_id}/copy/async", {
            params: { path: { proj_id: project.id, env_id: source.id } },
            body: {
              target_env: targetEnv,
              conflict_strategy: formText(form, "conflict_strategy") === "overwrite" ? "overwrite" : "fail",
            },
          }),
        );
        setStarted({ projectId: project.id, sourceId: source.id, taskId: task.task_id });
      }}
    >
      <Radio.Group
        label="Copy into"
        value={target}
        onChange={(value) => setTarget(value === "existing" ? "existing" : "new")}
      >
        <Group mt="xs">
          <Radio value="new" label="A new environment" />
          <Radio value="existing" label="An existing environment" disabled={others.length === 0} />
        </Group>
      </Radio.Group>
      {target === "new" ? (
        <>
          <KeyInput label="New environment key" />
          <TextInput label="New environment name" name="name" required />
        </>
      ) : (
        <Select
          label="Target environment"
          name="existing"
          placeholder="Choose an environment"
          required
          data={others.map((e) => ({ value: e.key, label: e.name }))}
        />
      )}
      <Radio.Group
        label="When the target already has an object with the same key"
        name="conflict_strategy"
        defaultValue="fail"
      >
        <Group mt="xs">
          <Radio value="fail" label="Fail (write nothing)" />
          <Radio value="overwrite" label="Overwrite it" />
        </Group>
      </Radio.Group>
    </FormModal>
  );
}

function CopyTask({
  started,
  project,
  onClose,
  onCopied,
}: {
  started: Started;
  project: Ref;
  onClose: () => void;
  onCopied: () => unknown;
}) {
  const org = useOrg();
  const task = useQuery({
    queryKey: [org.id, "copy-task", started.taskId],
    queryFn: async () => {
      const result = unwrap(
        await api.GET("/v2/projects/{proj_id}/envs/{env_id}/copy/async/{task_id}/result", {
          params: {
            path: { proj_id: started.projectId, env_id: started.sourceId, task_id: started.taskId },
            query: { wait: 10 },
          },
        }),
      );
      if (result.status !== "processing") onCopied();
      return result;
    },
    refetchInterval: (query) => (query.state.data?.status === "processing" ? 500 : false),
  });
  const data = task.data;
  return (
    <Modal opened onClose={onClose} title="Copying the environment" centered>
      <Stack>
        {task.error ? <ErrorState error={task.error} /> : null}
        {!data || data.status === "processing" ? (
          <>
            <Text role="status">Processing… {data?.progress ?? 0}%</Text>
            <Progress value={data?.progress ?? 0} animated aria-label="Copy progress" />
          </>
        ) : data.status === "success" ? (
          <Alert color="green" title="Copied" role="status">
            {data.result ? (
              <Anchor
                component={Link}
                to={envPath(org.key, project.key, data.result.key)}
                onClick={onClose}
                c="inherit"
                underline="always"
              >
                {named`Open ${data.result.name}`}
              </Anchor>
            ) : (
              "The environment was copied."
            )}
          </Alert>
        ) : (
          <Alert color="red" title={data.error?.title ?? "The copy failed"} role="alert">
            {data.error?.message ?? ""}
          </Alert>
        )}
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Close
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
