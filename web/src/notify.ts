import { notifications } from "@mantine/notifications";
import { describeError } from "./components/states";

// Mantine's close button has no name of its own.
const closeButtonProps = { "aria-label": "Close the notification" };

export function notifyError(error: unknown): void {
  notifications.show({ color: "red", ...describeError(error), closeButtonProps });
}

export function notifyDone(message: string): void {
  notifications.show({ color: "green", message, closeButtonProps });
}
