import { ERROR_CODES } from "./errors.ts";

/** `code` spans for backquoted text; everything else escaped. */
function inline(text: string): string {
  const escaped = text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return escaped.replace(/`([^`]+)`/g, "<code>$1</code>");
}

/**
 * The error codes as a page: every error body's `support_link` points to `/errors#CODE`, an anchor here. One
 * section per code: its status, title and what to do.
 */
export function errorsPage(): string {
  const sections = Object.entries(ERROR_CODES).map(
    ([code, { status, title, help }]) =>
      `<section id="${code}"><h2><a href="#${code}">${code}</a> <span class="status">${status}</span></h2>` +
      `<p class="title">${inline(title)}</p><p>${inline(help)}</p></section>`,
  );
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Gatehouse error codes</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 48rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h2 { font-size: 1.1rem; margin: 0; } h2 a { color: inherit; text-decoration: none; font-family: ui-monospace, monospace; }
section { border-top: 1px solid #ddd; padding: .75rem 0; } section:target { background: #fff8d6; }
.status { color: #666; font-weight: normal; } .title { margin: .25rem 0; font-weight: 600; }
code { background: #f2f2f2; padding: 0 .2em; border-radius: 3px; }
</style>
</head>
<body>
<h1>Gatehouse error codes</h1>
<p>Every error answer has the same body: <code>error_code</code> (one of these), <code>title</code>, <code>message</code>
(what went wrong with this request), <code>id</code> (the request id, also in the server log) and
<code>support_link</code> (this page, at the code). This list as JSON: <code>GET /errors</code> with
<code>Accept: application/json</code>.</p>
${sections.join("\n")}
</body>
</html>
`;
}
