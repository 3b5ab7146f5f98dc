import { Type, type Static } from "typebox";

export const TwoFactorCode = Type.Object(
  {
    totp_code: Type.Optional(Type.String({ maxLength: 16, description: "the authenticator app's 6 digits" })),
    recovery_code: Type.Optional(
      Type.String({ maxLength: 32, description: "or one of the recovery codes (once)" }),
    ),
  },
  { additionalProperties: false },
);
export type TwoFactorCode = Static<typeof TwoFactorCode>;

export const TwoFactorRead = Type.Object({
  enabled: Type.Boolean({ description: "the member has a confirmed TOTP factor" }),
  required: Type.Boolean({ description: "the active organization requires one for password logins" }),
  recovery_remaining: Type.Integer({ description: "recovery codes not used yet" }),
});
export type TwoFactorRead = Static<typeof TwoFactorRead>;

export const TwoFactorEnrolment = Type.Object({
  secret: Type.String({ description: "base32, for apps that cannot scan the QR code" }),
  otpauth_url: Type.String({ description: "the otpauth:// URI the QR code holds" }),
  qr_code: Type.String({ description: "a PNG data URL of the QR code" }),
});
export type TwoFactorEnrolment = Static<typeof TwoFactorEnrolment>;

export const RecoveryCodes = Type.Object({
  recovery_codes: Type.Array(Type.String(), { description: "shown once: keep them somewhere safe" }),
});
