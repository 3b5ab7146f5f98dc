import js from "@eslint/js";
import tseslint from "typescript-eslint";
import reactHooks from "eslint-plugin-react-hooks";

export default tseslint.config(
  {
    ignores: [
      "node_modules/",
      "data/",
      "dist/",
      "bench/results/",
      "web/dist/",
      "web/src/api/openapi.d.ts",
      "test/web/screenshots/",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  { files: ["web/**/*.{ts,tsx}"], ...reactHooks.configs.flat["recommended-latest"] },
);
