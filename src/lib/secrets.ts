import { createCipheriv, createDecipheriv, createHash, randomBytes, scryptSync } from "node:crypto";

const SECRET_PREFIX = "gh_";

/** 32 random bytes: 256 bits of entropy. */
export const generateSecret = (): string => SECRET_PREFIX + randomBytes(32).toString("base64url");

/** Keys are looked up by hash: the secret itself is never stored in plain text. */
export const hashSecret = (secret: string): string =>
  createHash("sha256").update(secret, "utf8").digest("hex");

/** What a listing may show of a secret: enough to tell keys apart, never enough to use one. */
export const displayPrefix = (secret: string): string => secret.slice(0, 10);

/**
 * AES-256-GCM with a key derived from the operator's secret key, so an organization admin can be shown a
 * key's secret again while the database alone never reveals it.
 */
export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string | undefined;
}

export function createSecretBox(masterKey: string): SecretBox {
  const key = scryptSync(masterKey, "gatehouse-api-key-secrets", 32);
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return [
        "v1",
        iv.toString("base64url"),
        cipher.getAuthTag().toString("base64url"),
        body.toString("base64url"),
      ].join(".");
    },
    open(sealed) {
      const [version, iv, tag, body] = sealed.split(".");
      if (version !== "v1" || !iv || !tag || body === undefined) return undefined;
      try {
        const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
        decipher.setAuthTag(Buffer.from(tag, "base64url"));
        return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString(
          "utf8",
        );
      } catch {
        return undefined;
      }
    },
  };
}
