import { Badge, Code, Group, List, Stack, Text } from "@mantine/core";

/** The engine's reason, as the check routes answer it. */
export type Reason =
  | { kind: "rbac"; role: string; tenant: string }
  | {
      kind: "rebac";
      role: string;
      instance: string;
      tenant: string;
      via: { role: string; instance: string; relation: string }[];
    }
  | { kind: "abac"; user_set: string; resource_set: string }
  | { kind: "deny"; code: string; message: string; expired?: { role: string; expired_at: string }[] };

const typeOf = (instance: string) => instance.slice(0, Math.max(0, instance.indexOf(":"))) || instance;

/** `folder#editor on folder:docs`: a role of a resource type held on an instance. */
const held = (role: string, instance: string) => `${typeOf(instance)}#${role} on ${instance}`;

/** An allow or a deny, as a badge. */
export function Verdict({ allow, size }: { allow: boolean; size?: "lg" }) {
  return (
    <Badge color={allow ? "teal" : "red"} size={size} variant="light">
      {allow ? "Allowed" : "Denied"}
    </Badge>
  );
}

/** A decision: its badge and the grant path of an allow, or the closest miss of a deny. */
export function DecisionView({ allow, reason }: { allow: boolean; reason: Reason }) {
  return (
    <Stack gap="xs">
      <Group gap="xs">
        <Verdict allow={allow} size="lg" />
      </Group>
      <ReasonView reason={reason} />
    </Stack>
  );
}

export function ReasonView({ reason }: { reason: Reason }) {
  switch (reason.kind) {
    case "rbac":
      return (
        <Text size="sm" role="group" aria-label="Grant path">
          Granted by the tenant role <Code>{reason.role}</Code> in tenant <Code>{reason.tenant}</Code>.
        </Text>
      );
    case "rebac": {
      const steps = [
        ...reason.via.map((hop) => ({ text: held(hop.role, hop.instance), relation: hop.relation })),
        { text: held(reason.role, reason.instance), relation: undefined },
      ];
      return (
        <Stack gap={4} role="group" aria-label="Grant path">
          <Text size="sm">
            Granted by the role <Code>{held(reason.role, reason.instance)}</Code> in tenant{" "}
            <Code>{reason.tenant}</Code>
            {reason.via.length > 0 ? ", derived:" : " (assigned directly)."}
          </Text>
          {reason.via.length > 0 && (
            <List size="sm" type="ordered">
              {steps.map((step, i) => (
                <List.Item key={i}>
                  {step.text}
                  {step.relation !== undefined && ` → via ${step.relation}`}
                </List.Item>
              ))}
            </List>
          )}
          {reason.via.length > 0 && (
            <Text size="sm" c="dimmed">
              Derivation:{" "}
              {reason.via
                .map((hop) => `${typeOf(hop.instance)}#${hop.role} → `)
                .join("")
                .concat(`${typeOf(reason.instance)}#${reason.role}`)}{" "}
              via {reason.via.map((hop) => hop.relation).join(", ")}
            </Text>
          )}
        </Stack>
      );
    }
    case "abac":
      return (
        <Text size="sm" role="group" aria-label="Grant path">
          Granted by a set rule: user set <Code>{reason.user_set}</Code> on resource set{" "}
          <Code>{reason.resource_set}</Code>.
        </Text>
      );
    case "deny":
      return (
        <Stack gap={4} role="group" aria-label="Closest miss">
          <Text size="sm">
            Closest miss (<Code>{reason.code}</Code>): {reason.message}
          </Text>
        </Stack>
      );
  }
}
