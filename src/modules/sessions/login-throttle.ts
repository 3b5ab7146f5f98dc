import type { FastifyRequest } from "fastify";
import { AppError } from "../../lib/errors.ts";
import type { FailureLimiter } from "../../plugins/rate-limit.ts";

const LOGIN_WINDOW_MS = 15 * 60_000;

export interface ThrottleDeps {
  failures: FailureLimiter;
  limits: { perAccount: number; perAddress: number };
  /** Tells the caller to answer 429 with Retry-After (the rate limiter's headers). */
  onLimited: (retryAfterSeconds: number, limit: number) => void;
}

/**
 * What a request's throttle needs: the shared failure counters, the configured limits, and the request to mark
 * limited (the rate limiter's onSend hook turns that into RateLimit-* and Retry-After headers).
 */
export const throttleDeps = (
  failures: FailureLimiter,
  config: { loginFailuresPerAccount: number; loginFailuresPerAddress: number },
  request: FastifyRequest,
): ThrottleDeps => ({
  failures,
  limits: { perAccount: config.loginFailuresPerAccount, perAddress: config.loginFailuresPerAddress },
  onLimited: (reset, limit) => {
    request.rateLimit = { limit, remaining: 0, reset, limited: true };
  },
});

/**
 * Failed logins, counted per address, per account and per account and address in fixed windows (docs/members.md,
 * Abuse). A wrong password and a wrong second-factor code are both failures of the account.
 */
export function createLoginThrottle(deps: ThrottleDeps) {
  const { failures } = deps;
  const tooMany = (wait: number, limit: number, what = "failed logins") => {
    deps.onLimited(wait, limit);
    return new AppError("TOO_MANY_REQUESTS", `too many ${what}; retry in ${wait} s`, {
      retry_after_seconds: wait,
    });
  };

  return {
    /**
     * 429 for an address over its failures (with any account), for an account and address pair over the
     * account's limit, and for an account over its limit from an address that has failed on it: so guesses
     * against one account from anywhere lock it for the guessers, but the member's correct password from an
     * address that has not failed on it still logs in.
     */
    async limited(email: string, ip: string): Promise<void> {
      const { perAccount, perAddress } = deps.limits;
      const [address, pair, account, pairFailed] = await Promise.all([
        failures.retryAfter(`login:address:${ip}`, perAddress, LOGIN_WINDOW_MS),
        failures.retryAfter(`login:pair:${email}|${ip}`, perAccount, LOGIN_WINDOW_MS),
        failures.retryAfter(`login:account:${email}`, perAccount, LOGIN_WINDOW_MS),
        failures.retryAfter(`login:pair:${email}|${ip}`, 1, LOGIN_WINDOW_MS),
      ]);
      if (address > 0) throw tooMany(address, perAddress);
      const wait = Math.max(pair, pairFailed > 0 ? account : 0);
      if (wait > 0) throw tooMany(wait, perAccount);
    },

    /** Counts a failed login of the account from the address, then throws `error`. */
    async failed(email: string, ip: string, error: AppError): Promise<never> {
      await failures.record(`login:account:${email}`, LOGIN_WINDOW_MS);
      await failures.record(`login:pair:${email}|${ip}`, LOGIN_WINDOW_MS);
      await failures.record(`login:address:${ip}`, LOGIN_WINDOW_MS);
      throw error;
    },

    /** Setup and invite codes: an address that keeps guessing them gets 429, as for logins. */
    async guessing(kind: "setup" | "invite", ip: string): Promise<void> {
      const wait = await failures.retryAfter(
        `${kind}:address:${ip}`,
        deps.limits.perAccount,
        LOGIN_WINDOW_MS,
      );
      if (wait > 0) throw tooMany(wait, deps.limits.perAccount, `wrong ${kind} codes`);
    },
    async wrongCode(kind: "setup" | "invite", ip: string, error: AppError): Promise<never> {
      await failures.record(`${kind}:address:${ip}`, LOGIN_WINDOW_MS);
      throw error;
    },
  };
}
export type LoginThrottle = ReturnType<typeof createLoginThrottle>;
