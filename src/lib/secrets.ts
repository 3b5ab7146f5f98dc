import { createCipheriv, createDecipheriv, createHash, randomBytes, scryptSync } from "node:crypto";

const SECRET_PREFIX = "gh_";

/** `gh_<region>_` and 32 random bytes (256 bits of entropy): the region tells a deployment at once that a key is not its own. */
const generateSecret = (region: string): string =>
  `${SECRET_PREFIX}${region}_${randomBytes(32).toString("base64url")}`;

/**
 * The region a secret names, when it names one of `regions`. Older secrets (`gh_` and random text) name none; random
 * text that happens to start like a region name and an underscore names it only if that region exists.
 */
export function regionOfSecret(secret: string, regions: Record<string, string>): string | undefined {
  if (!secret.startsWith(SECRET_PREFIX)) return undefined;
  const end = secret.indexOf("_", SECRET_PREFIX.length);
  if (end < 0) return undefined;
  const region = secret.slice(SECRET_PREFIX.length, end);
  return Object.hasOwn(regions, region) ? region : undefined;
}

/** Keys are looked up by hash: the secret itself is never stored in plain text. */
export const hashSecret = (secret: string): string =>
  createHash("sha256").update(secret, "utf8").digest("hex");

/** What a listing may show of a secret: enough to tell keys apart, never enough to use one. */
export const displayPrefix = (secret: string): string => secret.slice(0, 10);

/**
 * The deployment's API key secrets: made new (naming its region), and sealed at rest with AES-256-GCM under a key
 * derived from the operator's secret key, so an organization admin can be shown a key's secret again while the
 * database alone never reveals it.
 */
export interface SecretBox {
  newSecret(): string;
  seal(plain: string): string;
  open(sealed: string): string | undefined;
}

export function createSecretBox(masterKey: string, region = "us"): SecretBox {
  const key = scryptSync(masterKey, "gatehouse-api-key-secrets", 32);
  return {
    newSecret: () => generateSecret(region),
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
