/**
 * Import rules of src/ (npm run deps, part of npm run check), as docs/architecture.md draws them: no import cycle,
 * a module's service used by its own routes only, domain below the modules, routes registered by the app only, and the
 * PDP's layers.
 */
export default {
  forbidden: [
    {
      name: "no-circular",
      comment: "No import cycle between files of src/ (type-only imports count too).",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "no-other-module-service",
      comment:
        "A module's service is used by its own routes only; what modules share lives in src/domain/ " +
        "as functions taking a transaction.",
      severity: "error",
      from: { path: "^src/modules/([^/]+)/" },
      to: { path: "^src/modules/[^/]+/[^/]+[.]service[.]ts$", pathNot: "^src/modules/$1/" },
    },
    {
      name: "services-stay-in-their-module",
      comment:
        "Outside src/modules only the modules' routes, repositories and schemas may be imported; what else is " +
        "shared lives in src/domain.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/modules/" },
      to: { path: "^src/modules/[^/]+/[^/]+[.]service[.]ts$" },
    },
    {
      name: "domain-below-modules",
      comment:
        "src/domain is the layer below the modules: what its records use (repositories, schemas) lives in " +
        "src/domain, and a module imports it from there.",
      severity: "error",
      from: { path: "^src/domain/" },
      to: { path: "^src/modules/" },
    },
    {
      name: "routes-only-in-the-app",
      comment: "A module's routes are registered by src/app.ts and used by nothing else.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/(app[.]ts|modules/)" },
      to: { path: "^src/modules/[^/]+/[^/]+[.]routes[.]ts$" },
    },
    {
      name: "engine-is-pure",
      comment:
        "The PDP's engine decides from data in memory: it imports nothing outside src/pdp/engine/ but pure " +
        "libraries without I/O (safe-regex2, which vets URL-mapping regexes).",
      severity: "error",
      from: { path: "^src/pdp/engine/" },
      to: { pathNot: "(^src/pdp/engine/|(^|/)node_modules/safe-regex2/)" },
    },
    {
      name: "pdp-runtime-below-http",
      comment:
        "The PDP's layers: engine < runtime (replicas, decision log, the standalone PDP's sync in runtime/standalone/) < " +
        "http (routes and the one decide path); " +
        "embedded.ts and standalone.ts assemble them.",
      severity: "error",
      from: { path: "^src/pdp/(engine|runtime)/" },
      to: { path: "^src/pdp/(http/|embedded[.]ts$|standalone[.]ts$)" },
    },
    {
      name: "opentelemetry-sdk-loaded-lazily",
      comment:
        "With tracing and OTLP export off nothing of the OpenTelemetry SDK is loaded: only tracing-sdk.ts and " +
        "otel-resource.ts import it, and they are imported dynamically (types aside).",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/lib/(tracing-sdk|otel-resource)[.]ts$" },
      to: {
        path: "(^|/)node_modules/@opentelemetry/(sdk-|exporter-|resources|semantic-conventions)|^src/lib/(tracing-sdk|otel-resource)[.]ts$",
        dependencyTypesNot: ["dynamic-import", "type-only"],
      },
    },
    {
      name: "pdp-through-its-storage",
      comment:
        "The PDP reaches storage only through the PdpStorage interface (src/pdp/storage.ts), which " +
        "src/domain/pdp-storage.ts implements; it never imports modules, domain code or the control plane's " +
        "plugins (the HTTP plumbing both servers use is in src/http/).",
      severity: "error",
      from: { path: "^src/pdp/" },
      to: { path: "^src/(modules|domain|plugins)/" },
    },
    {
      name: "control-plane-sees-pdp-types-only",
      comment:
        "The control plane uses the PDP's engine (pure) and its boundary types (storage.ts, checks.ts), never its runtime or routes.",
      severity: "error",
      from: { path: "^src/(modules|domain|changes|plugins|tasks|lib|db)/" },
      to: { path: "^src/pdp/", pathNot: "^src/pdp/(engine/|storage[.]ts$|decision-port[.]ts$)" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
  },
};
