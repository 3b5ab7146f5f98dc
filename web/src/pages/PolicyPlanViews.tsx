import { Alert, Badge, Group, List, SimpleGrid, Stack, Text, Title } from "@mantine/core";
import type { paths } from "../api/openapi";
import { Verdict } from "../components/reason";
import { DataTable } from "../components/tables";

type Answer<P extends keyof paths> = paths[P] extends {
  post: { responses: { 200: { content: { "application/json": infer T } } } };
}
  ? T
  : never;
export type Plan = Answer<"/v2/schema/{proj_id}/{env_id}/policy/plan">;
export type Replay = Answer<"/v2/schema/{proj_id}/{env_id}/policy/replay">;
export type Applied = Answer<"/v2/schema/{proj_id}/{env_id}/policy/apply">;
type Change = Plan["changes"][number];

const OP = { create: "Create", update: "Change", delete: "Delete" } as const;
const OP_COLOR = { create: "green", update: "blue", delete: "red" } as const;

/** "2 created, 1 changed, 0 deleted". */
export const summaryText = (s: Plan["summary"]) =>
  `${s.create} created, ${s.update} changed, ${s.delete} deleted`;

/** The changes of a plan or an apply, one row each; the dangerous ones (as the plan names them) flagged. */
export function ChangesTable({
  changes,
  dangerous = [],
}: {
  changes: Change[];
  dangerous?: Plan["dangerous"];
}) {
  const danger = (c: Change) => dangerous.find((d) => d.object === c.object && d.key === c.key);
  return (
    <DataTable
      label="Changes"
      columns={["Change", "Object", "Key", "Fields"]}
      rows={changes}
      rowKey={(c, i) => `${i}:${c.op}:${c.object}:${c.key}`}
      emptyRow="Nothing would change: the file is the environment's policy."
      cells={(c) => [
        <Group gap={6} wrap="nowrap">
          <Badge color={OP_COLOR[c.op]} variant="light">
            {OP[c.op]}
          </Badge>
          {danger(c) && (
            <Badge color="orange" variant="light">
              Dangerous
            </Badge>
          )}
        </Group>,
        c.object,
        <Text ff="monospace" size="sm">
          {c.key}
        </Text>,
        c.fields?.join(", ") ?? "",
      ]}
    />
  );
}

/** A plan: its counts, the dangerous changes in words, then every change. */
export function PlanView({ plan }: { plan: Plan }) {
  return (
    <Stack>
      <Text size="sm" aria-label="Plan summary">
        At revision {plan.revision}: {summaryText(plan.summary)}.
      </Text>
      {plan.dangerous.length > 0 && (
        <Alert color="orange" variant="light" title="Dangerous changes">
          <List size="sm">
            {plan.dangerous.map((d) => (
              <List.Item key={`${d.object}:${d.key}`}>
                {d.object} <code>{d.key}</code>: {d.reason}
              </List.Item>
            ))}
          </List>
        </Alert>
      )}
      <ChangesTable changes={plan.changes} dangerous={plan.dangerous} />
    </Stack>
  );
}

const percent = (share: number) => `${(share * 100).toFixed(1)}%`;

/** A replay's counts, by resource type and action, and its flips with both decisions and reasons. */
export function ReplayView({ replay }: { replay: Replay }) {
  if (replay.replayed === 0)
    return (
      <Alert color="gray" variant="light" title="Nothing to replay">
        The last 24 hours have no decisions to replay in this environment ({replay.message}).
      </Alert>
    );
  return (
    <Stack>
      <Text size="sm" aria-label="Replay summary">
        {replay.message}.
      </Text>
      <SimpleGrid cols={{ base: 2, sm: 5 }}>
        {(
          [
            ["Replayed", replay.replayed],
            ["Flipped", replay.flipped],
            ["Deny → allow", replay.to_allow],
            ["Allow → deny", replay.to_deny],
            ["Share", percent(replay.share)],
          ] as const
        ).map(([label, value]) => (
          <Stack key={label} gap={0}>
            <Text size="xs" c="dimmed">
              {label}
            </Text>
            <Text fw={600}>{value}</Text>
          </Stack>
        ))}
      </SimpleGrid>
      <Title order={3} size="h5">
        By resource type and action
      </Title>
      <DataTable
        label="Replay by resource type and action"
        columns={["Resource type", "Action", "Replayed", "Flipped", "To allow", "To deny"]}
        rows={replay.by_resource_action}
        rowKey={(r) => `${r.resource_type}:${r.action}`}
        cells={(r) => [r.resource_type, r.action, r.replayed, r.flipped, r.to_allow, r.to_deny]}
      />
      <Title order={3} size="h5">
        Decisions that flip
      </Title>
      <DataTable
        label="Flips"
        columns={["Time", "User", "Action", "Resource", "Before", "After"]}
        rows={replay.flips}
        rowKey={(f, i) => f.id ?? String(i)}
        emptyRow="No decision of the window flips."
        cells={(f) => [
          f.timestamp ? new Date(f.timestamp).toLocaleString() : "",
          f.user,
          f.action,
          <Text ff="monospace" size="sm">
            {f.resource.key ? `${f.resource.type}:${f.resource.key}` : f.resource.type}
          </Text>,
          <Side side={f.before} />,
          <Side side={f.after} />,
        ]}
      />
      {replay.flips_truncated && (
        <Text size="sm" c="dimmed">
          Only the first {replay.flips.length} flips are listed.
        </Text>
      )}
    </Stack>
  );
}

function Side({ side }: { side: { allow: boolean; reason: string } }) {
  return (
    <Stack gap={2}>
      <Verdict allow={side.allow} />
      <Text size="xs">{side.reason}</Text>
    </Stack>
  );
}
