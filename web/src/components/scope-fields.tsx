import { useState } from "react";
import { Select } from "@mantine/core";
import { useEnvironments, useProjects } from "../queries";

export type Level = "org" | "project" | "env";

/**
 * What a key, a grant or a webhook covers: the organization, a project, or an environment of it (the levels given). The fields, with the level
 * and project chosen; the environment's key is the form's `environment` field.
 */
export function useScopeFields(initial: Level, label: string, levels: Partial<Record<Level, string>>) {
  const [level, setLevel] = useState<Level>(initial);
  const [proj, setProj] = useState<string | null>(null);
  const projects = useProjects();
  const envs = useEnvironments(proj ?? undefined);
  const fields = (
    <>
      <Select
        label={label}
        value={level}
        onChange={(value) => setLevel((value as Level | null) ?? initial)}
        allowDeselect={false}
        data={(Object.keys(levels) as Level[]).map((value) => ({ value, label: levels[value] ?? value }))}
      />
      {level !== "org" && (
        <Select
          label="Project"
          placeholder="Choose a project"
          required
          value={proj}
          onChange={setProj}
          data={(projects.data ?? []).map((p) => ({ value: p.key, label: p.name }))}
        />
      )}
      {level === "env" && (
        <Select
          label="Environment"
          name="environment"
          placeholder="Choose an environment"
          required
          disabled={!proj}
          data={(envs.data ?? []).map((e) => ({ value: e.key, label: e.name }))}
        />
      )}
    </>
  );
  return { level, proj, fields };
}
