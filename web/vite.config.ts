import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// Built by scripts/build-web.mjs (npm run build:web) into web/dist, which the API server serves at `/`;
// `npx vite web` serves it for development, with /v2 sent to a local `npm start`.
export default defineConfig({
  plugins: [react()],
  // The manifest lets the build script add up the JavaScript of a first visit.
  build: { outDir: "dist", emptyOutDir: true, manifest: true, chunkSizeWarningLimit: 800 },
  server: { proxy: { "/v2": "http://127.0.0.1:8000" } },
});
