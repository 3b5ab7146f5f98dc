import type { ReactNode } from "react";
import { Button, Group, Stack, Title } from "@mantine/core";
import { useEnvPlace, type Resource } from "../../policy";

/** A form opened on the page: its title, fields and what submitting does. */
export type Dialog =
  | {
      kind: "form";
      title: string;
      submitLabel: string;
      fields: ReactNode;
      submit: (form: FormData) => Promise<unknown>;
    }
  | { kind: "delete"; title: string; confirm: string; consequence: string; run: () => Promise<unknown> };

/** A resource type, the others (relations point to them) and how the page opens a form or a delete dialog. */
export type CardProps = {
  resource: Resource;
  all: Resource[];
  canWrite: boolean;
  open: (dialog: Dialog) => void;
};

/** What the parts of a resource's card share: its path, a section's add button, a delete dialog. */
export function useCardTools({ resource, canWrite, open }: CardProps) {
  const { path } = useEnvPlace();
  const r = { ...path, resource_id: resource.key };
  const add = (label: string, onClick: () => void) =>
    canWrite && (
      <Button size="compact-sm" variant="light" onClick={onClick} aria-label={`${label} to ${resource.key}`}>
        {label}
      </Button>
    );
  const remove = (what: string, key: string, consequence: string, run: () => Promise<unknown>) =>
    open({ kind: "delete", title: `Delete ${what} ${key}`, confirm: key, consequence, run });
  return { r, add, remove };
}

export function Section({
  title,
  action,
  children,
}: {
  title: string;
  action?: ReactNode;
  children: ReactNode;
}) {
  return (
    <Stack gap="xs">
      <Group justify="space-between">
        <Title order={3} size="h5">
          {title}
        </Title>
        {action}
      </Group>
      {children}
    </Stack>
  );
}
