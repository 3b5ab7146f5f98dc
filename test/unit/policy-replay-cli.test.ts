import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { policyCommand } from "../../src/cli/policy.ts";
import { replayText } from "../../src/cli/policy-replay.ts";

async function run(...argv: string[]) {
  let out = "";
  let err = "";
  const code = await policyCommand(argv, {
    env: { GATEHOUSE_API_KEY: "k" },
    out: (t) => (out += t),
    err: (t) => (err += t),
  });
  return { code, out, err };
}

test("policy replay: wrong flags are usage errors (exit 1) before any request", async () => {
  const dir = await mkdtemp(join(tmpdir(), "gatehouse-replay-cli-"));
  const file = join(dir, "p.yaml");
  await writeFile(file, "resources: {}\n");
  const unreachable = ["--env", "a/b", "--url", "http://127.0.0.1:9"];
  for (const [argv, message] of [
    [["replay", ...unreachable], /one of a policy FILE and --draft-env/],
    [["replay", file, "--draft-env", "copy", ...unreachable], /one of a policy FILE and --draft-env/],
    [["replay", file, "--since", "yesterday", ...unreachable], /--since is a duration/],
    [["replay", file, "--since", "1h", "--from", "5", ...unreachable], /--since and --from/],
    [["replay", file, "--to", "soon", ...unreachable], /--to is Unix seconds or an ISO 8601 time/],
    [["replay", file, "--revision", "x", ...unreachable], /--revision needs a whole number/],
    [["replay", file, "--limit", "-1", ...unreachable], /--limit needs a whole number/],
    [["replay", file, "--format", "xml", ...unreachable], /--format is text or json/],
    [["replay", join(dir, "missing.yaml"), ...unreachable], /cannot read .*missing\.yaml: ENOENT/],
    [["apply", file, "--revision", "-2", ...unreachable], /--revision needs a whole number/],
  ] as const) {
    const r = await run(...argv);
    assert.equal(r.code, 1, argv.join(" "));
    assert.match(r.err, message);
  }
});

test("policy replay: the request it sends, and the window of --since", async () => {
  const bodies: unknown[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let text = "";
    req.on("data", (c: Buffer) => (text += c.toString()));
    req.on("end", () => {
      bodies.push({ url: req.url, body: JSON.parse(text) as unknown });
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          replayed: 3,
          flipped: 0,
          message: "0 of 3 of the window's decisions flip (0.0%): 0 allow -> deny, 0 deny -> allow",
          by_resource_action: [],
          flips: [],
          flips_truncated: false,
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  try {
    const r = await run(
      "replay",
      "--draft-env",
      "copy",
      "--env",
      "app/prod",
      "--url",
      url,
      "--since",
      "2h",
      "--to",
      "7200",
    );
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, "0 of 3 of the window's decisions flip (0.0%): 0 allow -> deny, 0 deny -> allow.\n");
    assert.deepEqual(bodies, [
      {
        url: "/v2/schema/app/prod/policy/replay",
        body: { draft: { environment: "copy" }, timestamp_from: 0, timestamp_to: 7200 },
      },
    ]);
  } finally {
    server.close();
  }
});

test("policy replay: each flip with both reasons, the truncation and the flipping groups", () => {
  const text = replayText({
    replayed: 10,
    flipped: 3,
    message: "3 of 10 of the window's decisions flip (30.0%): 2 allow -> deny, 1 deny -> allow",
    by_resource_action: [
      { resource_type: "document", action: "delete", replayed: 4, flipped: 3, to_allow: 1, to_deny: 2 },
      { resource_type: "document", action: "read", replayed: 6, flipped: 0, to_allow: 0, to_deny: 0 },
    ],
    flips: [
      {
        timestamp: "2026-11-28T10:00:00.000+00:00",
        user: "ann",
        action: "delete",
        resource: { type: "document", key: "d1", tenant: "t1" },
        before: { allow: true, reason: "allowed by role 'admin' in tenant 't1'" },
        after: { allow: false, reason: "denied (NO_PERMISSION): no role grants document:delete" },
      },
    ],
    flips_truncated: true,
  });
  assert.deepEqual(text.split("\n"), [
    "~ allow -> deny: ann delete document:d1 in t1 (2026-11-28T10:00:00.000+00:00)",
    "    before: allowed by role 'admin' in tenant 't1'",
    "    after:  denied (NO_PERMISSION): no role grants document:delete",
    "  ... 2 more (--limit lists more)",
    "By resource type and action:",
    "  document delete: 3 of 4 flip (2 -> deny, 1 -> allow)",
    "3 of 10 of the window's decisions flip (30.0%): 2 allow -> deny, 1 deny -> allow.",
    "",
  ]);
});
