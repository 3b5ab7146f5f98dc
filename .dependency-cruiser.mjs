/**
 * Import rules of src/ (npm run deps, part of npm run check): no import cycle, and no module importing another
 * module's service.
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
      name: "domain-not-module-services",
      comment:
        "src/domain/ holds what modules share: it may use their repositories and schemas, never their " +
        "services or routes.",
      severity: "error",
      from: { path: "^src/domain/" },
      to: { path: "^src/modules/[^/]+/[^/]+[.](service|routes)[.]ts$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^src/dashboard/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
  },
};
