import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";
import type { Plugin } from "vite";

/**
 * Some d3 packages serve both recharts (the API log's chart) and @xyflow/react (the instance graph). Shared, Rollup
 * would split them into a chunk of their own, which a first visit to the API log then fetches apart from its chart
 * (0.7 KB more gzip than inside it). The d3 modules the graph's side imports load again under a `?graph` id, so
 * the chart's chunk stays whole. (use-sync-external-store is shared too, and stays a chunk of its own: it is
 * CommonJS, which a query would keep from being converted.)
 */
function graphOwnD3(): Plugin {
  // What only the graph imports; whatever those import from d3 comes as the graph's copy too.
  const graphSide = /\/node_modules\/(@xyflow\/[a-z]+|d3-zoom|d3-drag|d3-transition|d3-selection)\//;
  return {
    name: "graph-own-d3",
    enforce: "pre",
    async resolveId(source, importer, options) {
      if (!importer || !/^d3-[a-z]+$/.test(source)) return null;
      if (!importer.endsWith("?graph") && !graphSide.test(importer)) return null;
      const resolved = await this.resolve(source, importer, { ...options, skipSelf: true });
      return resolved && { ...resolved, id: `${resolved.id}?graph` };
    },
  };
}

// Built by scripts/build-web.mjs (npm run build:web) into web/dist, which the API server serves at `/`;
// `npx vite web` serves it for development, with /v2 sent to a local `npm start`.
export default defineConfig({
  plugins: [react(), graphOwnD3()],
  // The manifest lets the build script add up the JavaScript of a first visit.
  build: { outDir: "dist", emptyOutDir: true, manifest: true, chunkSizeWarningLimit: 800 },
  server: { proxy: { "/v2": "http://127.0.0.1:8000" } },
});
