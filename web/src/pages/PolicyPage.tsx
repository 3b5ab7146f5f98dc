import { useState } from "react";
import { Alert, Button, Card, FileButton, Group, Stack, Text, Textarea, Title } from "@mantine/core";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, ApiError, unwrap } from "../api/client";
import { withSentence } from "../components/sentences";
import { ErrorState, QueryState } from "../components/states";
import { PageHead } from "../components/tables";
import { useEnvPlace, useRefreshSchema } from "../policy";
import { ChangesTable, PlanView, ReplayView, summaryText, type Plan } from "./PolicyPlanViews";

/** Offers `text` as a file to save (no request: the browser writes it). */
function download(text: string, name: string) {
  const url = URL.createObjectURL(new Blob([text], { type: "application/yaml" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.click();
  URL.revokeObjectURL(url);
}

/** The plan, replay and apply of one draft; `policy` is the text the plan was made of. */
function PlanCard({
  plan,
  policy,
  onReplan,
  onApplied,
}: {
  plan: Plan;
  policy: string;
  onReplan: () => void;
  onApplied: () => void;
}) {
  const { path, canWrite } = useEnvPlace();
  const replay = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST("/v2/schema/{proj_id}/{env_id}/policy/replay", {
          params: { path },
          body: { draft: { policy, revision: plan.revision } },
        }),
      ),
  });
  const apply = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST("/v2/schema/{proj_id}/{env_id}/policy/apply", {
          params: { path },
          body: { policy, revision: plan.revision },
        }),
      ),
    onSuccess: onApplied,
  });
  const stale = (e: unknown) => e instanceof ApiError && e.status === 409;
  const staleError = [apply.error, replay.error].find(stale);
  return (
    <Card withBorder component="section" aria-label="Plan">
      <Stack>
        <Title order={2} size="h3">
          Plan
        </Title>
        <PlanView plan={plan} />
        <Group>
          <Button variant="light" loading={replay.isPending} onClick={() => replay.mutate()}>
            Replay the last 24 hours against this change
          </Button>
          {canWrite && !apply.data && (
            <Button color="red" loading={apply.isPending} onClick={() => apply.mutate()}>
              Apply
            </Button>
          )}
        </Group>
        {staleError ? (
          <Alert color="orange" variant="light" title="The environment changed since this plan" role="alert">
            <Stack gap="xs" align="flex-start">
              <Text size="sm">
                {(staleError as Error).message}. Plan again to see the changes as they are now.
              </Text>
              <Button size="xs" variant="default" onClick={onReplan}>
                Re-plan
              </Button>
            </Stack>
          </Alert>
        ) : (
          [replay.error, apply.error].map((e, i) => e && <ErrorState key={i} error={withSentence(e)} />)
        )}
        {replay.data && (
          <section aria-label="Replay">
            <Title order={2} size="h4" mb="xs">
              Replay of the last 24 hours
            </Title>
            <ReplayView replay={replay.data} />
          </section>
        )}
        {apply.data && (
          <Alert color="green" variant="light" title="Applied" role="status">
            <Stack gap="xs">
              <Text size="sm">
                {apply.data.replanned ? "Planned again and applied" : "Applied"}:{" "}
                {summaryText(apply.data.summary)}; the environment is at revision {apply.data.revision}.
              </Text>
              <ChangesTable changes={apply.data.changes} />
            </Stack>
          </Alert>
        )}
      </Stack>
    </Card>
  );
}

/** The environment's policy file: export, edit or upload, plan, replay the decision log, apply. */
export default function PolicyPage() {
  const { path, key, canWrite } = useEnvPlace();
  const refresh = useRefreshSchema();
  const queryClient = useQueryClient();
  const exported = useQuery({
    queryKey: [...key, "policy-file"],
    queryFn: async () => unwrap(await api.GET("/v2/schema/{proj_id}/{env_id}/policy", { params: { path } })),
  });
  const [draft, setDraft] = useState<string | null>(null);
  const text = draft ?? exported.data?.policy ?? "";
  const plan = useMutation({
    mutationFn: async (policy: string) => ({
      policy,
      plan: unwrap(
        await api.POST("/v2/schema/{proj_id}/{env_id}/policy/plan", { params: { path }, body: { policy } }),
      ),
    }),
  });
  const planned = plan.data;
  return (
    <Stack>
      <PageHead title="Policy as code" />
      <Text size="sm">
        The environment&apos;s resources, roles, relations, condition sets and attribute schemas as one YAML
        file (docs/policy-as-code.md). Edit it or upload a file, plan to see what would change, replay the
        last day&apos;s decisions against the change{canWrite ? ", then apply it in one revision" : ""}.
      </Text>
      <QueryState query={exported}>
        {(file) => (
          <Card withBorder component="section" aria-label="Policy file">
            <Stack>
              <Group justify="space-between">
                <Title order={2} size="h3">
                  Policy file
                </Title>
                <Group gap="xs">
                  <FileButton
                    accept=".yaml,.yml,text/yaml,text/plain"
                    onChange={(f) => void f?.text().then(setDraft)}
                  >
                    {(props) => (
                      <Button variant="default" {...props}>
                        Upload a file
                      </Button>
                    )}
                  </FileButton>
                  <Button variant="default" onClick={() => download(text, `${path.env_id}.policy.yaml`)}>
                    Download
                  </Button>
                  {draft !== null && (
                    <Button variant="subtle" onClick={() => setDraft(null)}>
                      Back to the environment&apos;s file
                    </Button>
                  )}
                </Group>
              </Group>
              <Textarea
                label="Policy (YAML)"
                description={`Exported at revision ${file.revision}${draft !== null ? "; edited" : ""}`}
                value={text}
                onChange={(e) => setDraft(e.currentTarget.value)}
                autosize
                minRows={12}
                maxRows={40}
                spellCheck={false}
                styles={{ input: { fontFamily: "var(--mantine-font-family-monospace)" } }}
              />
              <Group>
                <Button loading={plan.isPending} onClick={() => plan.mutate(text)}>
                  Plan
                </Button>
              </Group>
              {plan.error && <ErrorState error={withSentence(plan.error)} />}
            </Stack>
          </Card>
        )}
      </QueryState>
      {planned && !plan.isPending && (
        <PlanCard
          key={`${planned.plan.revision}:${planned.policy}`}
          plan={planned.plan}
          policy={planned.policy}
          onReplan={() => plan.mutate(planned.policy)}
          onApplied={() => {
            setDraft(null);
            void queryClient.invalidateQueries({ queryKey: [...key, "policy-file"] });
            void refresh();
          }}
        />
      )}
    </Stack>
  );
}
