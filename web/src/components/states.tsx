import type { ReactNode } from "react";
import { Alert, Center, Loader, Stack, Text } from "@mantine/core";
import { ApiError } from "../api/client";

/** While a query loads. */
export function Loading({ label = "Loading" }: { label?: string }) {
  return (
    <Center py="xl" role="status" aria-label={label}>
      <Loader size="sm" />
    </Center>
  );
}

/** A failed call: the API's title and message. */
export function ErrorState({ error }: { error: unknown }) {
  // The status too: a 403 reads as the API's refusal, whatever its title.
  const title = error instanceof ApiError ? `${error.title} (${error.status})` : "Something went wrong";
  const message = error instanceof Error ? error.message : String(error);
  return (
    <Alert color="red" title={title} role="alert" variant="light">
      {message}
    </Alert>
  );
}

/** A list with nothing in it yet. */
export function Empty({ children }: { children: ReactNode }) {
  return (
    <Stack align="center" py="xl">
      <Text c="dimmed">{children}</Text>
    </Stack>
  );
}

/** Loading, error or the content of one query. */
export function QueryState<T>({
  query,
  children,
}: {
  query: { isPending: boolean; error: unknown; data: T | undefined };
  children: (data: T) => ReactNode;
}) {
  if (query.error) return <ErrorState error={query.error} />;
  if (query.isPending || query.data === undefined) return <Loading />;
  return <>{children(query.data)}</>;
}
