import { useState } from "react";
import { Button, Stack, TextInput, Textarea } from "@mantine/core";
import { api, unwrap } from "../../api/client";
import { FormModal, formText, TypedConfirmModal } from "../../components/dialogs";
import { Empty, QueryState } from "../../components/states";
import { PageHead } from "../../components/tables";
import { keyList, useEnvPlace, useRefreshSchema, useResources } from "../../policy";
import type { Dialog } from "./card-parts";
import { ResourceCard } from "./ResourceCard";
import { NameKeyFields } from "../../components/key-fields";

/**
 * An environment's resource types, each with its actions, attributes, resource roles (permissions, `extends`,
 * derivations) and relations to other resource types.
 */
export default function ResourcesPage() {
  const { path, canWrite } = useEnvPlace();
  const resources = useResources();
  const refresh = useRefreshSchema();
  const [dialog, setDialog] = useState<Dialog | null>(null);
  const writing = (fn: () => Promise<unknown>) => async () => {
    await fn();
    await refresh();
  };

  const newResource = () =>
    setDialog({
      kind: "form",
      title: "New resource",
      submitLabel: "Create",
      fields: (
        <>
          <NameKeyFields />
          <Textarea label="Description" name="description" autosize />
          <TextInput label="Actions" name="actions" description="action keys, separated by commas" />
        </>
      ),
      submit: async (form) => {
        unwrap(
          await api.POST("/v2/schema/{proj_id}/{env_id}/resources", {
            params: { path },
            body: {
              key: formText(form, "key"),
              name: formText(form, "name"),
              description: formText(form, "description"),
              actions: Object.fromEntries(keyList(formText(form, "actions")).map((a) => [a, {}])),
            },
          }),
        );
      },
    });

  return (
    <Stack>
      <PageHead title="Resources" action={canWrite && <Button onClick={newResource}>New resource</Button>} />
      <QueryState query={resources}>
        {(list) =>
          list.length === 0 ? (
            <Empty>No resource type in this environment yet.</Empty>
          ) : (
            list.map((resource) => (
              <ResourceCard
                key={resource.id}
                resource={resource}
                all={list}
                canWrite={canWrite}
                open={setDialog}
              />
            ))
          )
        }
      </QueryState>

      {dialog?.kind === "form" && (
        <FormModal
          title={dialog.title}
          opened
          onClose={() => setDialog(null)}
          submitLabel={dialog.submitLabel}
          onSubmit={async (form) => {
            await dialog.submit(form);
            await refresh();
          }}
        >
          {dialog.fields}
        </FormModal>
      )}
      {dialog?.kind === "delete" && (
        <TypedConfirmModal
          title={dialog.title}
          opened
          onClose={() => setDialog(null)}
          confirmText={dialog.confirm}
          consequence={dialog.consequence}
          onConfirm={writing(dialog.run)}
        />
      )}
    </Stack>
  );
}
