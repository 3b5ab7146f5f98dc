import { Button, Checkbox, Group, Paper, Select, Stack, Text, TextInput } from "@mantine/core";
import { CONDITION_OPERATORS, validateConditions } from "../../../../src/pdp/engine/conditions";
import { typeProblem, type DeclaredAttribute } from "./attribute-types";

// The condition language is the engine's own (src/pdp/engine/conditions.ts): the builder validates with the
// same function the API and the PDP use, so what it accepts is exactly what will be stored and evaluated.

export interface Leaf {
  kind: "leaf";
  path: string;
  operator: string;
  /** JSON (a number, an array, a quoted string...) or plain text, which is taken as a string. */
  value: string;
  /** Compare with another attribute (`{"ref": "<path>"}`) instead of a value. */
  ref: boolean;
}

export interface Group {
  kind: "group";
  op: "allOf" | "anyOf";
  not: boolean;
  children: Node[];
}

export type Node = Leaf | Group;

export const emptyGroup = (): Group => ({ kind: "group", op: "allOf", not: false, children: [] });
export const newLeaf = (path = ""): Leaf => ({
  kind: "leaf",
  path,
  operator: "equals",
  value: "",
  ref: false,
});

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function parseValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The condition document of a tree. */
export function toConditions(node: Node): Record<string, unknown> {
  const inner =
    node.kind === "leaf"
      ? { [node.path]: { [node.operator]: node.ref ? { ref: node.value } : parseValue(node.value) } }
      : { [node.op]: node.children.map(toConditions) };
  return node.kind === "group" && node.not ? { not: inner } : inner;
}

/** A stored condition document as a tree; any node the builder cannot show becomes the nearest equivalent. */
export function toTree(conditions: unknown): Group {
  const tree = nodeOf(conditions);
  return tree.kind === "group" ? tree : { ...emptyGroup(), children: [tree] };
}

function nodeOf(node: unknown): Node {
  if (!isObject(node)) return emptyGroup();
  const entries = Object.entries(node);
  if (entries.length === 1) {
    const [key, value] = entries[0] as [string, unknown];
    if ((key === "allOf" || key === "anyOf") && Array.isArray(value)) {
      return { kind: "group", op: key, not: false, children: value.map(nodeOf) };
    }
    if (key === "not") {
      const inner = nodeOf(value);
      return inner.kind === "group"
        ? { ...inner, not: !inner.not }
        : { ...emptyGroup(), not: true, children: [inner] };
    }
    if (isObject(value) && Object.keys(value).length === 1) {
      const [operator, operand] = Object.entries(value)[0] as [string, unknown];
      const ref = isObject(operand) && typeof operand.ref === "string" && Object.keys(operand).length === 1;
      return {
        kind: "leaf",
        path: key,
        operator,
        value: ref ? String(operand.ref) : typeof operand === "string" ? operand : JSON.stringify(operand),
        ref,
      };
    }
    if (isObject(value)) {
      return {
        ...emptyGroup(),
        children: Object.entries(value).map(([op, v]) => nodeOf({ [key]: { [op]: v } })),
      };
    }
  }
  return { ...emptyGroup(), children: entries.map(([key, value]) => nodeOf({ [key]: value })) };
}

/**
 * What is wrong with one node itself (children are checked on their own): as the engine says it, then whether the
 * comparison can hold for the attribute's declared type.
 */
function problemsOf(node: Node, declared: DeclaredAttribute[]): string[] {
  if (node.kind === "group") {
    return node.op === "anyOf" && node.children.length === 0 ? ["an “any of” group needs a condition"] : [];
  }
  const problems: string[] = [];
  if (node.path.trim() === "") problems.push("choose an attribute, e.g. user.department");
  else problems.push(...validateConditions(toConditions(node)).map((p) => p.message));
  if (!node.ref && node.value.trim() === "") problems.push("enter a value");
  if (problems.length === 0 && !node.ref) {
    const attribute = declared.find((a) => a.path === node.path.trim());
    const typed = typeProblem(attribute, node.operator, parseValue(node.value));
    if (typed) problems.push(typed);
  }
  return problems;
}

/** Every problem of the tree: save is disabled while there is one. */
export function treeProblems(node: Node, declared: DeclaredAttribute[] = []): number {
  return (
    problemsOf(node, declared).length +
    (node.kind === "group" ? node.children.reduce((n, c) => n + treeProblems(c, declared), 0) : 0)
  );
}

// Marks a field wrong without Mantine's red text, whose contrast is too low on white.
const invalid = (wrong: boolean) =>
  wrong ? { "aria-invalid": true, styles: { input: { borderColor: "var(--mantine-color-red-8)" } } } : {};

const OPERATORS = CONDITION_OPERATORS.map((op) => ({ value: op, label: op }));

/**
 * A visual editor of a condition tree: groups (all of / any of, optionally negated) of attribute comparisons,
 * nested to any depth. Each control is labelled with its leaf's number so it can be found by name.
 */
export function ConditionBuilder({
  value,
  onChange,
  prefix,
  declared = [],
  readOnly = false,
}: {
  value: Group;
  onChange: (next: Group) => void;
  /** The attributes a condition usually reads: "user" for user sets, "resource" for resource sets. */
  prefix: "user" | "resource";
  /** The declared attributes, offered in the attribute boxes and checked against their types. */
  declared?: DeclaredAttribute[];
  /** Shown to a member who may not write: the conditions as they are, with nothing to add, remove or change. */
  readOnly?: boolean;
}) {
  let counter = 0;
  let groups = 0;
  const listId = `declared-attributes-${prefix}`;
  const render = (node: Node, update: (next: Node | null) => void, depth: number): React.ReactNode => {
    const problems = problemsOf(node, declared);
    if (node.kind === "leaf") {
      const n = ++counter;
      const pathProblem = problems.some(
        (p) => p.startsWith("choose an attribute") || p.startsWith("unknown key"),
      );
      const valueProblem = problems.some(
        (p) => p === "enter a value" || p.includes("expects") || p.includes("never"),
      );
      const type = declared.find((a) => a.path === node.path.trim())?.type;
      return (
        <Stack key={`leaf-${n}`} gap={4}>
          <Group gap="xs" align="flex-start" wrap="nowrap">
            <TextInput
              aria-label={`Attribute ${n}`}
              placeholder={`${prefix}.department`}
              list={listId}
              rightSection={
                type && (
                  <Text size="xs" c="dimmed">
                    {type}
                  </Text>
                )
              }
              rightSectionWidth={type ? 84 : undefined}
              value={node.path}
              readOnly={readOnly}
              {...invalid(pathProblem)}
              onChange={(e) => update({ ...node, path: e.currentTarget.value })}
              w={200}
            />
            <Select
              aria-label={`Operator ${n}`}
              data={OPERATORS}
              value={node.operator}
              readOnly={readOnly}
              allowDeselect={false}
              searchable
              onChange={(op) => op && update({ ...node, operator: op })}
              w={190}
            />
            <TextInput
              aria-label={`Value ${n}`}
              placeholder={node.ref ? "user.other_attribute" : 'finance, 42 or ["a", "b"]'}
              value={node.value}
              readOnly={readOnly}
              {...invalid(valueProblem)}
              onChange={(e) => update({ ...node, value: e.currentTarget.value })}
              w={200}
            />
            <Checkbox
              label="attribute"
              aria-label={`Value ${n} is an attribute`}
              checked={node.ref}
              disabled={readOnly}
              onChange={(e) => update({ ...node, ref: e.currentTarget.checked })}
              mt={8}
            />
            {!readOnly && (
              <Button
                variant="subtle"
                color="red"
                aria-label={`Remove condition ${n}`}
                onClick={() => update(null)}
              >
                ×
              </Button>
            )}
          </Group>
          {problems.map((p) => (
            <Text key={p} size="xs" c="red.8" role="status">
              Condition {n}: {p}
            </Text>
          ))}
        </Stack>
      );
    }
    const group = node;
    const setChild = (i: number) => (next: Node | null) =>
      update({
        ...group,
        children:
          next === null
            ? group.children.filter((_, j) => j !== i)
            : group.children.map((c, j) => (j === i ? next : c)),
      });
    const label = depth === 0 ? "the conditions" : `group ${++groups}`;
    return (
      <Paper key={label} withBorder p="xs" bg={depth % 2 ? "var(--mantine-color-default-hover)" : undefined}>
        <Stack gap="xs">
          <Group gap="xs">
            <Select
              aria-label={`Match of ${label}`}
              data={[
                { value: "allOf", label: "All of (allOf)" },
                { value: "anyOf", label: "Any of (anyOf)" },
              ]}
              value={group.op}
              readOnly={readOnly}
              allowDeselect={false}
              onChange={(op) => (op === "allOf" || op === "anyOf") && update({ ...group, op })}
              w={170}
            />
            <Checkbox
              label="not"
              aria-label={`Negate ${label}`}
              checked={group.not}
              disabled={readOnly}
              onChange={(e) => update({ ...group, not: e.currentTarget.checked })}
            />
            {depth > 0 && !readOnly && (
              <Button
                size="compact-sm"
                variant="subtle"
                color="red"
                aria-label={`Remove ${label}`}
                onClick={() => update(null)}
              >
                Remove group
              </Button>
            )}
          </Group>
          {group.children.length === 0 && (
            <Text size="sm" c="dimmed">
              {group.op === "allOf" ? "No condition: everything matches." : "No condition."}
            </Text>
          )}
          {group.children.map((child, i) => render(child, setChild(i), depth + 1))}
          {problems.map((p) => (
            <Text key={p} size="xs" c="red.8" role="status">
              {p}
            </Text>
          ))}
          {!readOnly && (
            <Group gap="xs">
              <Button
                size="compact-sm"
                variant="light"
                aria-label={`Add condition to ${label}`}
                onClick={() => update({ ...group, children: [...group.children, newLeaf()] })}
              >
                Add condition
              </Button>
              <Button
                size="compact-sm"
                variant="light"
                aria-label={`Add group to ${label}`}
                onClick={() => update({ ...group, children: [...group.children, emptyGroup()] })}
              >
                Add group
              </Button>
            </Group>
          )}
        </Stack>
      </Paper>
    );
  };
  return (
    <>
      <datalist id={listId}>
        {declared.map((a) => (
          <option key={a.path} value={a.path} label={`${a.path} (${a.type})`} />
        ))}
      </datalist>
      {render(value, (next) => onChange(next && next.kind === "group" ? next : emptyGroup()), 0)}
    </>
  );
}
