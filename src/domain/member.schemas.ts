import { Type } from "typebox";
import { EMAIL_MAX_LENGTH, EMAIL_MIN_LENGTH } from "../lib/credential-rules.ts";

/** The member's shapes that organization-rows.ts checks an import against; the module adds the rest. */

export const Email = Type.String({
  format: "email",
  minLength: EMAIL_MIN_LENGTH,
  maxLength: EMAIL_MAX_LENGTH,
});

export const OnboardingStep = Type.Union([
  Type.Literal("create_organization"),
  Type.Literal("create_project"),
  Type.Literal("create_resource"),
  Type.Literal("create_actions"),
  Type.Literal("assign_permissions"),
  Type.Literal("assign_user_roles"),
  Type.Literal("connect_sdk"),
  Type.Literal("done"),
]);
