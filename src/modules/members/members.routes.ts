import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import type { Config } from "../../config.ts";
import { memberOf, principalOf } from "../../plugins/auth.ts";
import { createMailer } from "../../lib/mailer.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { PageQuery, errorResponses } from "../../lib/schemas.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import {
  InviteCreate,
  InviteParams,
  InviteRead,
  InviterQuery,
  MemberListQuery,
  MemberParams,
  MultiInviteResult,
  OrgMemberCreate,
  OrgMemberReadWithGrants,
  OrgMemberRemovePermissions,
  OrgMemberUpdate,
  OrgRefParams,
  OwnProfileUpdate,
} from "./members.schemas.ts";
import { createMembersService } from "./members.service.ts";

/** Members and invites are managed by organization admins; every member may read the organization's members. */
const ORG_ADMIN = { need: { level: "org", access: "admin" } } as const;
const ORG_READ = { need: { level: "org", access: "read" } } as const;

export const membersRoutes: FastifyPluginAsyncTypebox<{
  db: Kysely<Database>;
  box: SecretBox;
  config: Pick<Config, "publicUrl" | "inviteExpiryDays" | "smtpUrl" | "smtpFrom">;
}> = async (app, { db, box, config }) => {
  const mailer = config.smtpUrl ? createMailer(config.smtpUrl, config.smtpFrom) : undefined;
  if (mailer) app.addHook("onClose", async () => mailer.close());
  const members = createMembersService({
    db,
    box,
    publicUrl: config.publicUrl,
    inviteExpiryDays: config.inviteExpiryDays,
    mailer,
    log: app.log,
  });
  const tags = ["members"];
  app.get(
    "/v2/members",
    {
      config: ORG_READ,
      schema: {
        tags,
        summary: "List the organization's members with their grants",
        querystring: MemberListQuery,
        response: { 200: Type.Array(OrgMemberReadWithGrants), ...errorResponses(404) },
      },
    },
    (req) =>
      members.list(
        principalOf(req),
        { projectRef: req.query.project_id, envRef: req.query.env_id },
        pageRequest(req.query),
      ),
  );
  app.post(
    "/v2/members",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary:
          "Give grants to a member (by id or email); anyone else given by email is invited (202, the invite)",
        querystring: InviterQuery,
        body: OrgMemberCreate,
        response: { 200: OrgMemberReadWithGrants, 202: InviteRead, ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => {
      const done = await members.grant(
        principalOf(req),
        req.body,
        req.query.inviter_name ?? req.query.inviter_email ?? principalOf(req).member?.email,
      );
      return "invite" in done ? reply.code(202).send(done.invite) : done.member;
    },
  );
  app.delete(
    "/v2/members",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "Take grants away from a member (the last organization admin keeps its own: 409)",
        body: OrgMemberRemovePermissions,
        response: { 204: Type.Null(), ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => {
      await members.revoke(principalOf(req), req.body);
      return reply.code(204).send(null);
    },
  );
  app.get(
    "/v2/members/me",
    {
      config: { auth: "session" },
      schema: {
        tags,
        summary: "The member of the calling session, with its grants in the active organization",
        response: { 200: OrgMemberReadWithGrants, ...errorResponses() },
      },
    },
    (req) => members.me(memberOf(req)),
  );
  app.patch(
    "/v2/members/me",
    {
      config: { auth: "session" },
      schema: {
        tags,
        summary: "Change the calling member's own names (any member, whatever its grants)",
        body: OwnProfileUpdate,
        response: { 200: OrgMemberReadWithGrants, ...errorResponses() },
      },
    },
    (req) => members.updateMe(memberOf(req), req.body),
  );
  app.get(
    "/v2/members/:member_id",
    {
      config: ORG_READ,
      schema: {
        tags,
        summary: "Get a member by id or email",
        params: MemberParams,
        response: { 200: OrgMemberReadWithGrants, ...errorResponses(404) },
      },
    },
    (req) => members.get(principalOf(req), req.params.member_id),
  );
  app.patch(
    "/v2/members/:member_id",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "Update a member's dashboard settings or onboarding step",
        params: MemberParams,
        body: OrgMemberUpdate,
        response: { 200: OrgMemberReadWithGrants, ...errorResponses(404) },
      },
    },
    (req) => members.update(principalOf(req), req.params.member_id, req.body),
  );
  app.delete(
    "/v2/members/:member_id",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "Remove a member from the organization (its sessions there end at once; last admin: 409)",
        params: MemberParams,
        response: { 204: Type.Null(), ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => {
      await members.remove(principalOf(req), req.params.member_id);
      return reply.code(204).send(null);
    },
  );

  const inviteTags = ["invites"];
  app.get(
    "/v2/orgs/:org_id/invites",
    {
      config: ORG_ADMIN,
      schema: {
        tags: inviteTags,
        summary: "List the organization's invites (with their accept codes)",
        params: OrgRefParams,
        querystring: Type.Object(PageQuery),
        response: { 200: Type.Array(InviteRead), ...errorResponses(404) },
      },
    },
    (req) => members.listInvites(principalOf(req), req.params.org_id, pageRequest(req.query)),
  );
  app.post(
    "/v2/orgs/:org_id/invites",
    {
      config: ORG_ADMIN,
      schema: {
        tags: inviteTags,
        summary:
          "Invite people: each gets an accept link {public_url}/invite/{invite_code}, mailed when SMTP is set",
        params: OrgRefParams,
        querystring: InviterQuery,
        body: Type.Array(InviteCreate, { minItems: 1, maxItems: 100 }),
        response: { 200: MultiInviteResult, ...errorResponses(404) },
      },
    },
    (req) =>
      members.invite(
        principalOf(req),
        req.params.org_id,
        req.body,
        req.query.inviter_name ?? req.query.inviter_email ?? principalOf(req).member?.email,
      ),
  );
  app.delete(
    "/v2/orgs/:org_id/invites/:invite_id",
    {
      config: ORG_ADMIN,
      schema: {
        tags: inviteTags,
        summary: "Cancel an invite",
        params: InviteParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await members.cancelInvite(principalOf(req), req.params.org_id, req.params.invite_id);
      return reply.code(204).send(null);
    },
  );
};
