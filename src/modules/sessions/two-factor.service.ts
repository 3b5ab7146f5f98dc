import QRCode from "qrcode";
import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import type { Principal } from "../../lib/access.ts";
import { AppError } from "../../lib/errors.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import { findLoginSettings } from "../../domain/login-settings-records.ts";
import {
  acceptTotpCode,
  countUnusedRecoveryCodes,
  deleteTwoFactor,
  findTotp,
  newRecoveryCodes,
  newTotpSecret,
  startTotpEnrolment,
  totpOf,
  useRecoveryCode,
} from "../../domain/two-factor-records.ts";
import { createLoginThrottle, type ThrottleDeps } from "./login-throttle.ts";
import type { TwoFactorCode, TwoFactorEnrolment, TwoFactorRead } from "./two-factor.schemas.ts";

type MemberPrincipal = Principal & { member: NonNullable<Principal["member"]> };

const wrongCode = () => new AppError("INVALID_TWO_FACTOR_CODE", "the code is wrong or already used");

/** A member's own second factor: enrol (secret and QR code), confirm with a code (recovery codes), remove. */
export function createTwoFactorService(deps: { db: Kysely<Database>; box: SecretBox } & ThrottleDeps) {
  const { db, box } = deps;
  const throttle = createLoginThrottle(deps);

  /** A code of the member's factor (or, with `pending`, of the one being enrolled); wrong ones are failed logins. */
  async function proveCode(principal: MemberPrincipal, body: TwoFactorCode, ip: string, pending = false) {
    const { id, email } = principal.member;
    await throttle.limited(email, ip);
    const ok =
      body.totp_code !== undefined
        ? await acceptTotpCode(db, box, id, body.totp_code, pending)
        : !pending && body.recovery_code !== undefined && (await useRecoveryCode(db, id, body.recovery_code));
    if (!ok) await throttle.failed(email, ip, wrongCode());
  }

  return {
    async get(principal: MemberPrincipal): Promise<TwoFactorRead> {
      const row = await findTotp(db, principal.member.id);
      const settings = principal.organizationId
        ? await findLoginSettings(db, principal.organizationId)
        : undefined;
      return {
        enabled: !!row?.confirmed_at,
        required: settings?.require_two_factor === 1,
        recovery_remaining: row?.confirmed_at ? await countUnusedRecoveryCodes(db, principal.member.id) : 0,
      };
    },

    /** A new secret, shown once as text and as a QR code; it counts once confirmed. */
    async enrol(principal: MemberPrincipal): Promise<TwoFactorEnrolment> {
      if ((await findTotp(db, principal.member.id))?.confirmed_at)
        throw new AppError("CONFLICT", "a second factor is already enrolled: remove it first");
      const secret = newTotpSecret();
      await startTotpEnrolment(db, box, principal.member.id, secret);
      const url = totpOf(secret, principal.member.email).toString();
      return { secret, otpauth_url: url, qr_code: await QRCode.toDataURL(url) };
    },

    /** Confirms the enrolment with a code of the app: ten recovery codes, shown once. */
    async confirm(
      principal: MemberPrincipal,
      body: TwoFactorCode,
      ip: string,
    ): Promise<{ recovery_codes: string[] }> {
      const row = await findTotp(db, principal.member.id);
      if (!row || row.confirmed_at)
        throw new AppError("CONFLICT", "no enrolment to confirm: start one first");
      await proveCode(principal, { totp_code: body.totp_code ?? "" }, ip, true);
      return { recovery_codes: await newRecoveryCodes(db, principal.member.id) };
    },

    /** Removes the factor, proven by one of its codes or a recovery code. */
    async remove(principal: MemberPrincipal, body: TwoFactorCode, ip: string): Promise<void> {
      const row = await findTotp(db, principal.member.id);
      if (!row?.confirmed_at) throw new AppError("CONFLICT", "no second factor is enrolled");
      await proveCode(principal, body, ip);
      await deleteTwoFactor(db, principal.member.id);
    },
  };
}
