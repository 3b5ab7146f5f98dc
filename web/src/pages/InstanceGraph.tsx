import { Background, Controls, MarkerType, ReactFlow, type Edge, type Node } from "@xyflow/react";
import "@xyflow/react/dist/style.css";
import { useComputedColorScheme } from "@mantine/core";

export interface Neighbourhood {
  center: string;
  tuples: { subject: string; relation: string; object: string }[];
  assignments: { user: string; role: string; resource_instance: string }[];
  derived: { user: string; role: string; from: string; via: string }[];
}

/** Subjects on the left, the centre in the middle, objects on the right, users below. */
function layout(data: Neighbourhood): { nodes: Node[]; edges: Edge[] } {
  const nodes = new Map<string, Node>();
  const rows = [0, 0, 0];
  const place = (id: string, column: number, label = id) => {
    if (nodes.has(id)) return;
    const row = id === data.center ? 1 : (rows[column] = (rows[column] ?? 0) + 1) - 1;
    nodes.set(id, {
      id,
      position: { x: column * 260, y: row * 90 },
      data: { label },
      ...(id === data.center && { style: { fontWeight: 700, borderColor: "#e8590c", borderWidth: 2 } }),
    });
  };
  place(data.center, 1);
  const edges: Edge[] = [];
  const arrow = { type: MarkerType.ArrowClosed };
  data.tuples.forEach((t, i) => {
    place(t.subject, 0);
    place(t.object, 2);
    edges.push({ id: `t${i}`, source: t.subject, target: t.object, label: t.relation, markerEnd: arrow });
  });
  const users = [...new Set([...data.assignments, ...data.derived].map((a) => a.user))];
  users.forEach((user, i) =>
    nodes.set(`user:${user}`, {
      id: `user:${user}`,
      position: { x: i * 200, y: 320 },
      data: { label: `user ${user}` },
      style: { background: "var(--mantine-color-default-hover)" },
    }),
  );
  data.assignments.forEach((a, i) => {
    place(a.resource_instance, 0);
    edges.push({
      id: `a${i}`,
      source: `user:${a.user}`,
      target: a.resource_instance,
      label: a.role,
      markerEnd: arrow,
    });
  });
  data.derived.forEach((d, i) =>
    edges.push({
      id: `d${i}`,
      source: `user:${d.user}`,
      target: data.center,
      label: `${d.role} (derived via ${d.via})`,
      markerEnd: arrow,
      style: { strokeDasharray: "5 4", stroke: "#e8590c" },
    }),
  );
  return { nodes: [...nodes.values()], edges };
}

/**
 * One instance's neighbourhood, drawn with @xyflow/react: the instances its tuples link in and out, the users
 * holding roles on them, and the roles derived onto the centre (dashed). Its own chunk, loaded with this view.
 */
export default function InstanceGraph({ data }: { data: Neighbourhood }) {
  const { nodes, edges } = layout(data);
  // The graph's nodes, edges and controls follow the dashboard's light or dark scheme.
  const scheme = useComputedColorScheme("light");
  const summary = [
    ...data.tuples.map((t) => `${t.subject} ${t.relation} ${t.object}`),
    ...data.assignments.map((a) => `user ${a.user} has ${a.role} on ${a.resource_instance}`),
    ...data.derived.map(
      (d) => `user ${d.user} has ${d.role} on ${data.center}, derived from ${d.from} via ${d.via}`,
    ),
  ].join("; ");
  return (
    <div
      style={{ height: 420, border: "1px solid var(--mantine-color-default-border)", borderRadius: 4 }}
      role="figure"
      aria-label={`Graph around ${data.center}: ${summary || "no relation and no role"}`}
    >
      <ReactFlow
        nodes={nodes}
        edges={edges}
        fitView
        colorMode={scheme}
        nodesConnectable={false}
        proOptions={{ hideAttribution: false }}
      >
        <Background />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}
