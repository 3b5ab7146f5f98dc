import { notifications } from "@mantine/notifications";
import { ApiError } from "./api/client";

// Mantine's close button has no name of its own.
const closeButtonProps = { "aria-label": "Close the notification" };

export function notifyError(error: unknown): void {
  notifications.show({
    color: "red",
    title: error instanceof ApiError ? `${error.title} (${error.status})` : "Something went wrong",
    message: error instanceof Error ? error.message : String(error),
    closeButtonProps,
  });
}

export function notifyDone(message: string): void {
  notifications.show({ color: "green", message, closeButtonProps });
}
