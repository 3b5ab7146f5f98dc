import { useState, type FormEvent, type ReactNode } from "react";
import { Button, Group, Modal, Stack, Text, TextInput } from "@mantine/core";
import { ApiError } from "../api/client";
import { FieldErrors } from "./key-fields";
import { ErrorState } from "./states";
import { named } from "./user-text";

/** A modal form: submit runs `onSubmit`; its error (the API's title and message) shows in the form. */
export function FormModal({
  title,
  opened,
  onClose,
  onSubmit,
  submitLabel,
  danger,
  closeOnSuccess = true,
  hideSubmit = false,
  children,
}: {
  title: ReactNode;
  opened: boolean;
  onClose: () => void;
  onSubmit: (form: FormData) => Promise<unknown>;
  submitLabel: string;
  danger?: boolean;
  /** false when a success shows something else in its place. */
  closeOnSuccess?: boolean;
  /** true when the form only shows (a member who may not write). */
  hideSubmit?: boolean;
  children: ReactNode;
}) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await onSubmit(new FormData(e.currentTarget));
      if (closeOnSuccess) onClose();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const close = () => {
    setError(null);
    onClose();
  };
  return (
    <Modal opened={opened} onClose={close} title={title} centered>
      <form onSubmit={(e) => void submit(e)} onChange={() => error !== null && setError(null)}>
        <Stack>
          {error !== null && <ErrorState error={error} />}
          <FieldErrors.Provider value={error instanceof ApiError ? error.fields : {}}>
            {children}
          </FieldErrors.Provider>
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            {!hideSubmit && (
              <Button type="submit" loading={busy} color={danger ? "red" : undefined}>
                {submitLabel}
              </Button>
            )}
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** Deleting asks for the object's key typed out, so a slip of the mouse deletes nothing. */
export function TypedConfirmModal({
  title,
  opened,
  onClose,
  confirmText,
  consequence,
  onConfirm,
}: {
  title: ReactNode;
  opened: boolean;
  onClose: () => void;
  confirmText: string;
  consequence: string;
  onConfirm: () => Promise<unknown>;
}) {
  const [typed, setTyped] = useState("");
  return (
    <FormModal
      title={title}
      opened={opened}
      onClose={() => {
        setTyped("");
        onClose();
      }}
      submitLabel="Delete"
      danger
      onSubmit={async () => {
        if (typed !== confirmText) throw new Error(`type ${confirmText} to confirm`);
        await onConfirm();
      }}
    >
      <Text size="sm">{consequence}</Text>
      <TextInput
        label={named`Type ${confirmText} to confirm`}
        value={typed}
        onChange={(e) => setTyped(e.currentTarget.value)}
        autoComplete="off"
        data-autofocus
      />
    </FormModal>
  );
}

export const formText = (form: FormData, name: string) => String(form.get(name) ?? "").trim();
