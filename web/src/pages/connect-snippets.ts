/** Where an app reaches this server: the control plane, the PDP's check port and the OPA port ("" when off). */
export interface Endpoints {
  api: string;
  pdp: string;
  opa: string;
}

export interface Snippet {
  id: string;
  label: string;
  about: string;
  code: string;
}

// One example check throughout: may alice read documents in the tenant `default`?
const CHECK = '{"user":{"key":"alice"},"action":"read","resource":{"type":"document","tenant":"default"}}';
const CURL = `curl -s -X POST -H "Authorization: Bearer $ENV_KEY" -H 'Content-Type: application/json'`;

/** The copy-paste snippets of the Connect page; each reads the environment key from `ENV_KEY`. */
export function connectSnippets(at: Endpoints): Snippet[] {
  const snippets: Snippet[] = [
    {
      id: "node",
      label: "Node.js",
      about: "Permit's Node SDK (npm install permitio), pointed at this PDP and API.",
      code: [
        'import { Permit } from "permitio";',
        "",
        "const permit = new Permit({",
        "  token: process.env.ENV_KEY,",
        `  pdp: "${at.pdp}",`,
        `  apiUrl: "${at.api}",`,
        "});",
        'const allowed = await permit.check("alice", "read", { type: "document", tenant: "default" });',
        "console.log(allowed);",
      ].join("\n"),
    },
    {
      id: "python",
      label: "Python",
      about: "Permit's Python SDK (pip install permit), pointed at this PDP and API.",
      code: [
        "import os",
        "from permit.sync import Permit",
        "",
        `permit = Permit(token=os.environ["ENV_KEY"], pdp="${at.pdp}", api_url="${at.api}")`,
        'allowed = permit.check("alice", "read", {"type": "document", "tenant": "default"})',
        "print(allowed)",
      ].join("\n"),
    },
    {
      id: "curl",
      label: "curl",
      about: "One check on the PDP's /allowed route; the answer is {allow, result, debug}.",
      code: `${CURL} \\\n  ${at.pdp}/allowed \\\n  -d '${CHECK}'`,
    },
  ];
  if (at.opa)
    snippets.push({
      id: "opa",
      label: "OPA",
      about:
        "The OPA-compatible port, as permit.check(..., { useOpa: true }) calls it; the answer is {result: {allow}}.",
      code: `${CURL} \\\n  ${at.opa}/v1/data/permit/root \\\n  -d '{"input":${CHECK}}'`,
    });
  snippets.push(
    {
      id: "authzen",
      label: "AuthZEN",
      about: "OpenID AuthZEN 1.0 on the PDP port; the answer is {decision}.",
      code:
        `${CURL} \\\n  ${at.pdp}/access/v1/evaluation \\\n  -d '{"subject":{"type":"user","id":"alice"},` +
        `"action":{"name":"read"},"resource":{"type":"document","id":"doc-1","properties":{"tenant":"default"}}}'`,
    },
    {
      id: "standalone",
      label: "Standalone PDP",
      about:
        "A PDP next to your app that follows this environment (from a Gatehouse checkout after npm install; " +
        "installed as a package the command is gatehouse). In a container, the control plane's URL must be one " +
        "the container can reach.",
      code: [
        `bin/gatehouse.js pdp --control-plane ${at.api} --api-key "$ENV_KEY"`,
        "",
        "# or in a container, from the checkout:",
        `docker run --rm -v "$PWD":/app -w /app -p 7766:7766 -p 8181:8181 -e GATEHOUSE_HOST=0.0.0.0 \\`,
        `  -e GATEHOUSE_CONTROL_PLANE_URL=${at.api} -e GATEHOUSE_PDP_API_KEY="$ENV_KEY" \\`,
        "  node:20 node bin/gatehouse.js pdp",
      ].join("\n"),
    },
  );
  return snippets;
}
