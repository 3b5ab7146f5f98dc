import { notifications } from "@mantine/notifications";
import { ApiError } from "./api/client";

export function notifyError(error: unknown): void {
  notifications.show({
    color: "red",
    title: error instanceof ApiError ? error.title : "Something went wrong",
    message: error instanceof Error ? error.message : String(error),
  });
}

export function notifyDone(message: string): void {
  notifications.show({ color: "green", message });
}
