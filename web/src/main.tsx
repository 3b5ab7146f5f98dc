import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { RouterProvider } from "react-router";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { MantineProvider } from "@mantine/core";
import { Notifications } from "@mantine/notifications";
import "@mantine/core/styles.css";
import "@mantine/notifications/styles.css";
import "./global.css";
import { ApiError, onSessionEnded, setCsrfToken } from "./api/client";
import { router } from "./App";
import { cssVariables, theme } from "./theme";

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A 4xx will answer the same again; other failures get one more try.
      retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 1,
      refetchOnWindowFocus: false,
    },
  },
});

let leaving = false;
// Any 401 (an expired, ended or missing session): to the login page, which comes back here after the login.
onSessionEnded(() => {
  const { pathname, search, hash } = router.state.location;
  if (leaving || pathname === "/login") return;
  leaving = true;
  setCsrfToken(undefined);
  const next = encodeURIComponent(pathname + search + hash);
  void router
    .navigate(`/login?next=${next}`, { replace: true })
    .then(() => {
      // The ended session's data goes (a page with unsaved edits may keep the member; the login clears it then).
      if (router.state.location.pathname === "/login") queryClient.clear();
    })
    .finally(() => {
      leaving = false;
    });
});

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <MantineProvider theme={theme} cssVariablesResolver={cssVariables} defaultColorScheme="auto">
        <QueryClientProvider client={queryClient}>
          <Notifications />
          <RouterProvider router={router} />
        </QueryClientProvider>
      </MantineProvider>
    </StrictMode>,
  );
}
