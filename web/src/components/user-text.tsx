import { Fragment, type ReactNode } from "react";

/**
 * A text with user-supplied values in it (keys, names, e-mails), each value in a `<bdi>`: named`Delete user ${key}`.
 * A value's own direction controls (a U+202E in a name) then reorder that value only, never the words after it,
 * and a right-to-left name reads right to left. Tables and headings put a value alone in an element of its own.
 */
export function named(strings: TemplateStringsArray, ...values: ReactNode[]): ReactNode {
  return strings.map((text, i) => (
    <Fragment key={i}>
      {text}
      {i < values.length && <bdi>{values[i]}</bdi>}
    </Fragment>
  ));
}

/** JSON for display: direction controls in its strings are shown escaped (`\u202e`), as code should show them. */
export function jsonText(value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(
    /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
