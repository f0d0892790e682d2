// The conformance suite cannot send headers, and groundgate's /mcp is behind
// the admin token: this proxy forwards every request to TARGET (host:port)
// with `Authorization: Bearer TOKEN` added and everything else unchanged —
// method, path, body and every header, Host and Origin included, so that the
// server's DNS-rebinding check sees what the suite sent. It prints
// "listening HOST:PORT" once it serves on a free loopback port.
//
//   node proxy.mjs TARGET TOKEN
import http from 'node:http';

const [target, token] = process.argv.slice(2);
if (!target || !token) {
  console.error('usage: node proxy.mjs HOST:PORT TOKEN');
  process.exit(2);
}
const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];

const proxy = http.createServer((req, res) => {
  const up = http.request(
    { host, port, method: req.method, path: req.url, headers: { ...req.headers, authorization: `Bearer ${token}` } },
    (upRes) => {
      res.writeHead(upRes.statusCode, upRes.rawHeaders);
      upRes.pipe(res);
    },
  );
  up.on('error', (err) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(`proxy: ${err.message}\n`);
  });
  req.pipe(up);
});
proxy.listen(0, '127.0.0.1', () => {
  const a = proxy.address();
  console.log(`listening ${a.address}:${a.port}`);
});
