import { useEffect, useState, type ReactNode } from "react";
import { Alert, Button, Center, Loader, Stack, Text } from "@mantine/core";
import { ApiError } from "../api/client";
import { FormProblem } from "./sentences";

/** While a query loads. */
export function Loading({ label = "Loading" }: { label?: string }) {
  return (
    <Center py="xl" role="status" aria-label={label}>
      <Loader size="sm" />
    </Center>
  );
}

/** The title and message of a failure, as the alerts and notifications show them. */
export function describeError(error: unknown): { title: string; message: string } {
  if (error instanceof ApiError && error.status === 429) {
    return {
      title: "Too many requests (429)",
      message: `${error.message}. Nothing was changed; try again ${waitText(error.retryAfter)}.`,
    };
  }
  if (error instanceof FormProblem) return { title: "Not sent", message: error.message };
  // The status too: a 403 reads as the API's refusal, whatever its title.
  return {
    title: error instanceof ApiError ? `${error.title} (${error.status})` : "Something went wrong",
    message: error instanceof Error ? error.message : String(error),
  };
}

const waitText = (seconds: number | undefined) =>
  seconds === undefined
    ? "in a minute"
    : seconds === 0
      ? "now"
      : seconds < 120
        ? `in ${seconds} s`
        : `in ${Math.ceil(seconds / 60)} min`;

/** The seconds left until `at`, counted down once a second. */
function useSecondsUntil(at: number | undefined): number | undefined {
  const [now, setNow] = useState(Date.now);
  const left = at === undefined ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
  useEffect(() => {
    if (!left) return;
    const timer = setTimeout(() => setNow(Date.now()), 1000);
    return () => clearTimeout(timer);
  }, [left, now]);
  return left;
}

/** A 429: what it means, the wait counted down, then a way to try again. */
function RateLimited({ error, onRetry }: { error: ApiError; onRetry?: () => void }) {
  const left = useSecondsUntil(error.retryAt);
  return (
    <Alert color="orange" title="Too many requests (429)" role="alert" variant="light">
      <Stack gap="xs" align="flex-start">
        <Text size="sm">The server refused this call: {error.message}.</Text>
        <Text size="sm" fw={600}>
          Try again {waitText(left)}.
        </Text>
        {onRetry && (
          <Button size="xs" variant="default" disabled={left !== undefined && left > 0} onClick={onRetry}>
            Try again
          </Button>
        )}
      </Stack>
    </Alert>
  );
}

/** A failed call: the API's title and message (a 429 says when to try again). */
export function ErrorState({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  if (error instanceof ApiError && error.status === 429)
    return <RateLimited error={error} onRetry={onRetry} />;
  const { title, message } = describeError(error);
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
  query: { isPending: boolean; error: unknown; data: T | undefined; refetch?: () => unknown };
  children: (data: T) => ReactNode;
}) {
  const { refetch } = query;
  if (query.error) return <ErrorState error={query.error} onRetry={refetch && (() => void refetch())} />;
  if (query.isPending || query.data === undefined) return <Loading />;
  return <>{children(query.data)}</>;
}
