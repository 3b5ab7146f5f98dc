import { parseArgs } from "node:util";

/**
 * A shell command's own flags (`own`), and the rest as they were given, for `loadConfig` (the service's flags
 * that say where the database is).
 */
export function splitFlags(
  argv: string[],
  own: readonly string[],
): { values: Record<string, string | undefined>; configFlags: string[] } {
  const { values, tokens } = parseArgs({
    args: argv,
    options: Object.fromEntries(own.map((name) => [name, { type: "string" as const }])),
    strict: false,
    tokens: true,
  });
  const mine = new Set(own);
  const configFlags: string[] = [];
  for (const token of tokens ?? []) {
    if (token.kind === "option" && !mine.has(token.name)) {
      if (token.inlineValue) configFlags.push(`${token.rawName}=${token.value}`);
      else configFlags.push(token.rawName, ...(token.value !== undefined ? [token.value] : []));
    } else if (token.kind === "positional") configFlags.push(token.value);
  }
  const strings = Object.fromEntries(
    own.map((name) => [name, typeof values[name] === "string" ? (values[name] as string) : undefined]),
  );
  return { values: strings, configFlags };
}
