/* global process, setTimeout */
/**
 * The workload app of the Envoy mesh tests: an HTTP server answering every request with a JSON
 * echo of who it is and what it got, so a client's tally tells which backend served it and the
 * backend's headers tell what the sidecars added (X-Forwarded-Client-Cert, rewritten paths).
 * Plain JavaScript so it starts fast under `ip netns exec` without a TypeScript loader.
 *
 * argv: NAME VERSION PORTS (comma-separated). Behaviour per request, from request headers:
 *   x-echo-status: N        answer with status N
 *   x-echo-delay-ms: N      answer after N ms
 *   x-echo-fail-on: a,b     fail when this app's NAME is listed
 *   x-echo-fail-every: N    fail every Nth request this app got carrying that header
 *   x-echo-fail-status: N   the status of a failure (default 503, which Istio's default retry policy retries)
 * stdout, one JSON object per line: {"ready":true}, then {"seen":{method,path,host,port,httpVersion,headers}} per request.
 */
import { createServer } from 'node:http';

const [name = 'app', version = 'v1', ports = '8080'] = process.argv.slice(2);
let failEveryCount = 0;

function handle(req, res) {
  const h = req.headers;
  const seen = { method: req.method, path: req.url, host: h.host, port: req.socket.localPort, httpVersion: req.httpVersion, headers: h };
  process.stdout.write(`${JSON.stringify({ seen })}\n`);
  let status = Number(h['x-echo-status'] ?? 200);
  const failStatus = Number(h['x-echo-fail-status'] ?? 503);
  if (String(h['x-echo-fail-on'] ?? '').split(',').includes(name)) status = failStatus;
  const every = Number(h['x-echo-fail-every'] ?? 0);
  if (every > 0 && ++failEveryCount % every === 0) status = failStatus;
  const answer = () => {
    const body = JSON.stringify({ name, version, ...seen });
    res.writeHead(status, { 'content-type': 'application/json', 'x-echo-name': name });
    res.end(body);
  };
  const delay = Number(h['x-echo-delay-ms'] ?? 0);
  if (delay > 0) setTimeout(answer, delay);
  else answer();
}

// The same app on every port; ready once all listen.
const list = ports.split(',').map(Number);
let listening = 0;
for (const port of list) {
  const server = createServer(handle);
  server.keepAliveTimeout = 30_000;
  server.listen(port, '0.0.0.0', () => {
    if (++listening === list.length) process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  });
}
// Exits when the test closes stdin (or dies).
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
process.stdin.resume();
