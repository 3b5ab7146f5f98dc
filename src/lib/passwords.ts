import { Algorithm, hash, verify } from "@node-rs/argon2";
import { invalid } from "./errors.ts";
import { COMMON_PASSWORDS } from "./common-passwords.ts";

/** Passwords: Argon2id (the library's defaults: 19 MiB, 2 passes, as OWASP recommends), never logged or returned. */

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 256;

export const hashPassword = (password: string): Promise<string> =>
  hash(password, { algorithm: Algorithm.Argon2id });

/** A hash of nothing anyone knows: an unknown e-mail is verified against it, so it costs what a real one costs. */
let dummy: Promise<string> | undefined;

/** Whether the password matches; with no stored hash the same work is done and the answer is no. */
export async function verifyPassword(stored: string | null | undefined, password: string): Promise<boolean> {
  dummy ??= hashPassword(crypto.randomUUID());
  const target = stored ?? (await dummy);
  try {
    const ok = await verify(target, password);
    return ok && stored !== null && stored !== undefined;
  } catch {
    return false;
  }
}

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
