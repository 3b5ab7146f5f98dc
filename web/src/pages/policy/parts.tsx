import type { ReactNode } from "react";
import { Button, Group, Title } from "@mantine/core";

/** A page's heading with its main write action (shown to members who may write). */
export function PageHead({ title, action }: { title: string; action?: ReactNode }) {
  return (
    <Group justify="space-between">
      <Title order={1} size="h2">
        {title}
      </Title>
      {action}
    </Group>
  );
}

/** The Edit and Delete buttons of a row, named after the object for screen readers and tests. */
export function RowActions({
  name,
  onEdit,
  onDelete,
  children,
}: {
  name: string;
  onEdit?: () => void;
  onDelete: () => void;
  children?: ReactNode;
}) {
  return (
    <Group gap="xs" wrap="nowrap">
      {children}
      {onEdit && (
        <Button size="compact-xs" variant="subtle" aria-label={`Edit ${name}`} onClick={onEdit}>
          Edit
        </Button>
      )}
      <Button size="compact-xs" variant="subtle" color="red" aria-label={`Delete ${name}`} onClick={onDelete}>
        Delete
      </Button>
    </Group>
  );
}
