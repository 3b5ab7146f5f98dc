import { Button, Code, CopyButton, Group } from "@mantine/core";

/** A value to hand on (a secret, an invite link) with a copy button. */
export function CopyBlock({
  label,
  value,
  copyLabel,
  onClose,
}: {
  label: string;
  value: string | undefined;
  copyLabel: string;
  onClose: () => void;
}) {
  return (
    <>
      <Code block aria-label={label}>
        {value ?? "…"}
      </Code>
      <Group justify="flex-end">
        <CopyButton value={value ?? ""}>
          {({ copied, copy }) => <Button onClick={copy}>{copied ? "Copied" : copyLabel}</Button>}
        </CopyButton>
        <Button variant="default" onClick={onClose}>
          Close
        </Button>
      </Group>
    </>
  );
}
