// The ceiling for HTTP on this machine: a bare node:http server that reads the request body and answers a
// constant JSON body shaped like the PDP's answer (a bulk answer of 100 decisions on /allowed/bulk).
import http from "node:http";

const port = Number(process.argv[2] ?? "0");
const one = {
  allow: true,
  result: true,
  debug: { reason: { kind: "rbac", role: "editor", tenant: "t42" }, revision: 1 },
};
const single = Buffer.from(JSON.stringify(one));
const bulk = Buffer.from(JSON.stringify({ allow: Array.from({ length: 100 }, () => one) }));

const server = http.createServer((req, res) => {
  req.on("data", () => {});
  req.on("end", () => {
    const body = req.url === "/allowed/bulk" ? bulk : single;
    res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": body.length });
    res.end(body);
  });
});
server.keepAliveTimeout = 72_000;
server.listen(port, "127.0.0.1", () => console.log(`baseline listening on ${port}`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
