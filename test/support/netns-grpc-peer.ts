/**
 * A child process for traffic tests inside a network namespace (started with `ip netns exec`):
 * real gRPC backends bound to the namespace's own addresses, and a grpc-js-xds client whose
 * bootstrap comes from the parent (its xDS server is reached over a unix socket, which crosses
 * namespaces; the parent forwards it to meshpilot on loopback).
 *
 * Environment: PEER_BACKENDS=`name=ip:port,…`; GRPC_XDS_BOOTSTRAP_CONFIG (the client's bootstrap).
 * Protocol over stdio, one JSON object per line: it prints `{"ready":true}` once the backends
 * listen; each request line `{"target","n","metadata"?}` is answered with a Tally (callMany).
 */
import { register } from '@grpc/grpc-js-xds';
import { createInterface } from 'node:readline';
import { startGrpcBackend } from './grpc-backend.js';
import { callMany } from './xds-client.js';

export interface PeerRequest {
  readonly target: string;
  readonly n: number;
  readonly metadata?: Record<string, string>;
}

function parseBackends(spec: string): { name: string; host: string; port: number }[] {
  return spec
    .split(',')
    .filter(Boolean)
    .map((item) => {
      const m = /^([^=]+)=([^:]+):(\d+)$/.exec(item.trim());
      if (!m) throw new Error(`PEER_BACKENDS: "${item}" is not name=ip:port`);
      return { name: m[1]!, host: m[2]!, port: Number(m[3]) };
    });
}

async function main(): Promise<void> {
  const backends = await Promise.all(parseBackends(process.env.PEER_BACKENDS ?? '').map((b) => startGrpcBackend(b.name, b)));
  register();
  process.stdout.write(`${JSON.stringify({ ready: true, backends: backends.map((b) => b.address) })}\n`);
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line.trim() === '') continue;
    const req = JSON.parse(line) as PeerRequest;
    const tally = await callMany(req.target, req.n, { ...(req.metadata ? { metadata: req.metadata } : {}), deadlineMs: 3000 });
    process.stdout.write(`${JSON.stringify(tally)}\n`);
  }
  await Promise.all(backends.map((b) => b.stop()));
  process.exit(0);
}

main().catch((err: unknown) => {
  process.stderr.write(`netns-grpc-peer: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
