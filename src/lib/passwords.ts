import { Algorithm, hash, verify } from "@node-rs/argon2";
export { assertAcceptablePassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "./credential-rules.ts";

/** Passwords: Argon2id (the library's defaults: 19 MiB, 2 passes, as OWASP recommends), never logged or returned. */

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
