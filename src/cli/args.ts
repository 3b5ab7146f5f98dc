/** Flags of one command, taken out of the arguments; the rest (the settings' flags) goes to loadConfig. */
export function takeFlags<Name extends string>(
  argv: string[],
  names: readonly Name[],
  booleans: readonly Name[] = [],
): { values: Partial<Record<Name, string>>; rest: string[] } {
  const values: Partial<Record<Name, string>> = {};
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const [flag, inline] = arg.startsWith("--") ? splitOnce(arg.slice(2)) : [undefined, undefined];
    const name = names.find((n) => n === flag);
    if (name === undefined) {
      rest.push(arg);
      continue;
    }
    if (booleans.includes(name)) {
      values[name] = inline ?? "true";
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined || (inline === undefined && value.startsWith("--"))) {
      throw new UsageError(`--${name} needs a value`);
    }
    values[name] = value;
  }
  return { values, rest };
}

function splitOnce(text: string): [string, string | undefined] {
  const at = text.indexOf("=");
  return at < 0 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}

/** A command called the wrong way: main prints the message and points to `gatehouse help`. */
export class UsageError extends Error {}
