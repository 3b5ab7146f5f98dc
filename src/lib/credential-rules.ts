import { fullFormats } from "ajv-formats/dist/formats.js";
import { invalid } from "./errors.ts";
import { COMMON_PASSWORDS } from "./common-passwords.ts";

// A member's e-mail and password rules, apart from the hashing (a native module) so that checking the
// configuration loads none of it.

export const EMAIL_MIN_LENGTH = 3;
export const EMAIL_MAX_LENGTH = 254;

// ajv-formats' email rule is a RegExp (typed as any of its format kinds).
const EMAIL_FORMAT = fullFormats.email as RegExp;

/** What the members API accepts as an e-mail: its schema's `format: "email"` (ajv-formats) and length. */
export const isMemberEmail = (email: string): boolean =>
  email.length >= EMAIL_MIN_LENGTH && email.length <= EMAIL_MAX_LENGTH && EMAIL_FORMAT.test(email);

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 256;

/** 422 for a password that is too short, too long, or one of the common ones (or the e-mail itself). */
export function assertAcceptablePassword(password: string, email?: string, loc = ["body", "password"]): void {
  if ([...password].length < MIN_PASSWORD_LENGTH) {
    throw invalid(`a password needs at least ${MIN_PASSWORD_LENGTH} characters`, loc);
  }
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw invalid(`a password has at most ${MAX_PASSWORD_LENGTH} characters`, loc);
  }
  const lower = password.toLowerCase();
  if (COMMON_PASSWORDS.has(lower) || /^(.)\1+$/.test(password) || (email && lower === email.toLowerCase())) {
    throw invalid("this password is too common; choose another", loc);
  }
}
