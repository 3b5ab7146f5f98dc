import http from "node:http";
import type { AddressInfo } from "node:net";
import { createSign, generateKeyPairSync, randomUUID, type KeyObject } from "node:crypto";
import Provider from "oidc-provider";

/** A client registered with the test providers; Gatehouse is configured with the same. */
export const CLIENT = { id: "gatehouse", secret: "a-client-secret-for-tests-only-0123456789" };

export interface RunningProvider {
  issuer: string;
  close(): Promise<void>;
}

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)),
  );
}
const closeServer = (server: http.Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/**
 * The certified `oidc-provider` on a free loopback port, with its own development login page (any login and
 * password): the account of login `alice@acme.test` has that verified e-mail.
 */
export async function startOidcProvider(redirectUri: string): Promise<RunningProvider> {
  const server = http.createServer();
  const port = await listen(server);
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT.id,
        client_secret: CLIENT.secret,
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["given_name", "family_name"] },
    cookies: { keys: ["test-cookie-key-0123456789"] },
    features: { devInteractions: { enabled: true } },
    findAccount: (_ctx, id) => ({
      accountId: id,
      claims: () => ({ sub: id, email: id, email_verified: true, given_name: id.split("@")[0] }),
    }),
  });
  // The provider's own warnings (development keys and pages) are expected here.
  provider.on("server_error", () => {});
  server.on("request", provider.callback());
  return { issuer, close: () => closeServer(server) };
}

export type TokenClaims = Record<string, unknown>;

/**
 * A provider that signs whatever ID token a test asks for (RS256 with its JWKS key, or with a key it does not
 * publish): for the checks a certified provider never fails. `nextToken` builds the token of the next exchange.
 */
export async function startForgingProvider(): Promise<
  RunningProvider & {
    nextToken: (claims: (issuer: string) => TokenClaims, options?: { foreignKey?: boolean }) => void;
    userinfo: TokenClaims;
  }
> {
  const key = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const foreign = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const kid = "k1";
  let next: { claims: (issuer: string) => TokenClaims; foreignKey?: boolean } | undefined;
  const userinfo: TokenClaims = {};
  const server = http.createServer();
  const port = await listen(server);
  const issuer = `http://127.0.0.1:${port}`;
  const sign = (claims: TokenClaims, privateKey: KeyObject) => {
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const input = `${part({ alg: "RS256", typ: "JWT", kid })}.${part(claims)}`;
    const signature = createSign("RSA-SHA256").update(input).sign(privateKey).toString("base64url");
    return `${input}.${signature}`;
  };
  server.on("request", (req, res) => {
    const url = new URL(req.url ?? "/", issuer);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === "/.well-known/openid-configuration")
      return json(200, {
        issuer,
        authorization_endpoint: `${issuer}/auth`,
        token_endpoint: `${issuer}/token`,
        userinfo_endpoint: `${issuer}/me`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ["code"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["RS256"],
        code_challenge_methods_supported: ["S256"],
      });
    if (url.pathname === "/jwks")
      return json(200, {
        keys: [{ ...key.publicKey.export({ format: "jwk" }), kid, alg: "RS256", use: "sig" }],
      });
    if (url.pathname === "/me") return json(200, userinfo);
    if (url.pathname === "/token") {
      req.resume();
      const planned = next;
      next = undefined;
      if (!planned) return json(400, { error: "invalid_grant" });
      return json(200, {
        access_token: randomUUID(),
        token_type: "Bearer",
        expires_in: 300,
        id_token: sign(planned.claims(issuer), planned.foreignKey ? foreign.privateKey : key.privateKey),
      });
    }
    return json(404, { error: "not_found" });
  });
  return {
    issuer,
    userinfo,
    nextToken: (claims, options = {}) => {
      next = { claims, ...options };
    },
    close: () => closeServer(server),
  };
}
