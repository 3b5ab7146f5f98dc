import { useEffect } from "react";
import { useBlocker } from "react-router";
import { Button, Group, Modal, Text } from "@mantine/core";

/**
 * While `dirty`, leaving the page asks first: a link or the back button inside the dashboard opens a dialog
 * (stay, or leave and lose the changes), and closing or reloading the tab gets the browser's own question.
 */
export function UnsavedChangesGuard({ dirty }: { dirty: boolean }) {
  // Only another page unmounts this one; a change of the query string keeps its state.
  const blocker = useBlocker(
    ({ currentLocation, nextLocation }) => dirty && currentLocation.pathname !== nextLocation.pathname,
  );
  useEffect(() => {
    if (!dirty) return;
    const ask = (event: BeforeUnloadEvent) => event.preventDefault();
    window.addEventListener("beforeunload", ask);
    return () => window.removeEventListener("beforeunload", ask);
  }, [dirty]);
  if (blocker.state !== "blocked") return null;
  // A 401 sends the page to the login page: the session has ended, so these changes could not be saved anyway.
  const toLogin = blocker.location.pathname === "/login";
  return (
    <Modal
      opened
      onClose={() => blocker.reset()}
      title={toLogin ? "Your session has ended" : "Leave without saving?"}
      centered
    >
      <Text size="sm">
        {toLogin
          ? "Log in again to go on. The changes on this page are not saved and will be lost."
          : "This page has changes that are not saved. Leaving it loses them."}
      </Text>
      <Group justify="flex-end" mt="md">
        <Button variant="default" onClick={() => blocker.reset()} data-autofocus>
          Stay on this page
        </Button>
        <Button color="red" onClick={() => blocker.proceed()}>
          {toLogin ? "Log in again" : "Leave and discard"}
        </Button>
      </Group>
    </Modal>
  );
}
