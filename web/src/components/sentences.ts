import { ApiError } from "../api/client";

// What the API's validation messages say ("body.user.key: must NOT have fewer than 1 characters"), as plain words.
const PHRASES: [RegExp, (m: RegExpExecArray) => string][] = [
  [/^must be string$/, () => "must be text"],
  [/^must be object$/, () => "must be a JSON object"],
  [/^must be (integer|number)$/, () => "must be a number"],
  [/^must be boolean$/, () => "must be true or false"],
  [/^must NOT have fewer than 1 characters$/, () => "must not be empty"],
  [/^must NOT have more than (\d+) characters$/, (m) => `must be at most ${m[1]} characters long`],
  [/^must have required property '?([^']+)'?$/, (m) => `needs ${m[1]}`],
  [/^must NOT have additional properties$/, () => "has a field the API does not know"],
];

/** A validation message `loc: msg` as a sentence naming the field (`fields` gives the page's names for a path). */
export function validationSentence(message: string, fields: Record<string, string> = {}): string {
  const match = /^(?:body|query|path)\.?([\w.[\]-]*): (.+)$/.exec(message);
  if (!match) return capitalize(message.endsWith(".") ? message : `${message}.`);
  const [, where = "", what = ""] = match;
  const phrase = PHRASES.find(([re]) => re.test(what));
  const said = phrase ? phrase[1](phrase[0].exec(what)!) : what;
  const field =
    fields[where] ?? fields[where.replace(/\.\d+/g, "")] ?? (where ? `The field ${where}` : "The request");
  return `${field} ${said}.`;
}

/** An API error whose message is rewritten as a sentence when it is a validation error (422 or 400). */
export function withSentence(error: unknown, fields: Record<string, string> = {}): unknown {
  if (!(error instanceof ApiError) || (error.status !== 422 && error.status !== 400)) return error;
  return new ApiError(
    error.status,
    error.title,
    validationSentence(error.message, fields),
    error.code,
    error.retryAfter,
  );
}

/** A form the page refuses to send, with the sentence saying what to change. */
export class FormProblem extends Error {}

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
