/* global process */
/**
 * The load client of the Envoy mesh tests, run inside a workload's network namespace (so its
 * connections are captured by the namespace's iptables rules, as an app container's are). Plain
 * JavaScript so it starts fast under `ip netns exec`.
 *
 * stdin, one JSON object per line: {url, n, headers?, method?, concurrency?, timeoutMs?, newConnections?}.
 * stdout: {"ready":true}, then per request line a tally: statuses, `by` (which backend answered:
 * the echo app's name, else `status <code>`), errors (by code), a few sample responses, elapsedMs.
 * Redirects are not followed: a 301 is a result.
 */
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';

const SAMPLES = 3;

function once(url, o, agent) {
  return new Promise((resolve) => {
    const req = request(url, { method: o.method ?? 'GET', headers: o.headers ?? {}, agent, timeout: o.timeoutMs ?? 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
      res.on('error', (e) => resolve({ error: e.code ?? String(e) }));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
    req.on('error', (e) => resolve({ error: e.code ?? String(e) }));
    req.end();
  });
}

function backendOf(r) {
  try {
    const name = JSON.parse(r.body).name;
    if (typeof name === 'string') return name;
  } catch {
    /* not the echo app: Envoy's own answer */
  }
  return `status ${r.status}`;
}

async function run(cmd) {
  const concurrency = Math.max(1, cmd.concurrency ?? 1);
  // agent false: a connection of its own per request, closed after it (`Connection: close`).
  const agent = cmd.newConnections === true ? false : new Agent({ keepAlive: true, maxSockets: concurrency });
  const tally = { n: 0, statuses: {}, by: {}, errors: {}, samples: [], elapsedMs: 0 };
  const started = Date.now();
  let next = 0;
  const worker = async () => {
    while (next < cmd.n) {
      next++;
      const r = await once(cmd.url, cmd, agent);
      tally.n++;
      if (r.error !== undefined) {
        tally.errors[r.error] = (tally.errors[r.error] ?? 0) + 1;
        continue;
      }
      tally.statuses[r.status] = (tally.statuses[r.status] ?? 0) + 1;
      const who = backendOf(r);
      tally.by[who] = (tally.by[who] ?? 0) + 1;
      if (tally.samples.length < SAMPLES) tally.samples.push({ status: r.status, headers: r.headers, body: r.body.slice(0, 4000) });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  if (agent) agent.destroy();
  tally.elapsedMs = Date.now() - started;
  return tally;
}

process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  process.stdout.write(`${JSON.stringify(await run(JSON.parse(line)))}\n`);
}
process.exit(0);
