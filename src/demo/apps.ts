/**
 * The demo's workloads: one small server per loopback WorkloadEntry (and inline ServiceEntry
 * endpoint) of the config directory, on the address and port the config names. Each answers with
 * its service, version and workload name — as gRPC (a generic unary method, no .proto) on gRPC and
 * HTTP/2 ports, as HTTP/1.1 JSON on the others.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server as HttpServer } from 'node:http';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { parseAllDocuments } from 'yaml';

/** The one method every demo gRPC app serves. */
export const DEMO_METHOD = '/meshpilot.demo.Demo/Hello';

export interface DemoWorkload {
  readonly name: string;
  readonly service: string;
  readonly version: string;
  readonly address: string;
  readonly port: number;
  /** The port's protocol in its ServiceEntry (HTTP, GRPC, …); grpc unless known otherwise. */
  readonly protocol: string;
}

export interface DemoReply {
  readonly service: string;
  readonly version: string;
  readonly workload: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const labelsOf = (v: unknown): Record<string, string> =>
  isObj(v) ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, str(x)])) : {};

function yamlDocuments(dir: string): Obj[] {
  const out: Obj[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile() || !/\.ya?ml$/.test(e.name) || e.parentPath.split(/[\\/]/).some((p) => p.startsWith('.'))) continue;
    for (const doc of parseAllDocuments(readFileSync(join(e.parentPath, e.name), 'utf8'))) {
      const v: unknown = doc.toJS();
      if (isObj(v)) out.push(v);
    }
  }
  return out;
}

const isLoopback = (a: string): boolean => /^127\.\d+\.\d+\.\d+$/.test(a);

/** The loopback workloads the config directory names, with their ports' protocols. */
export function workloadsOf(dir: string): DemoWorkload[] {
  const docs = yamlDocuments(dir);
  const entries = docs.filter((d) => d.kind === 'ServiceEntry' && isObj(d.spec));
  // Port name → protocol, per `app` label the ServiceEntry selects (or any, for inline endpoints).
  const protocolOf = (app: string, portName: string): string => {
    for (const se of entries) {
      const spec = se.spec as Obj;
      const selector = isObj(spec.workloadSelector) ? labelsOf(spec.workloadSelector.labels) : {};
      if (selector.app !== undefined && selector.app !== app) continue;
      const ports = Array.isArray(spec.ports) ? spec.ports.filter(isObj) : [];
      const p = ports.find((x) => x.name === portName);
      if (p) return str(p.protocol).toUpperCase() || 'HTTP';
    }
    return 'GRPC';
  };
  const out: DemoWorkload[] = [];
  const add = (name: string, address: string, ports: unknown, labels: Record<string, string>): void => {
    if (!isLoopback(address) || !isObj(ports)) return;
    const service = labels.app ?? name;
    for (const [portName, port] of Object.entries(ports)) {
      if (typeof port !== 'number') continue;
      out.push({ name, service, version: labels.version ?? 'v1', address, port, protocol: protocolOf(service, portName) });
    }
  };
  for (const d of docs) {
    if (d.kind === 'WorkloadEntry' && isObj(d.spec) && isObj(d.metadata))
      add(str(d.metadata.name), str(d.spec.address), d.spec.ports, labelsOf(d.spec.labels));
  }
  for (const se of entries) {
    const spec = se.spec as Obj;
    const endpoints = Array.isArray(spec.endpoints) ? spec.endpoints.filter(isObj) : [];
    endpoints.forEach((e, i) => add(`${str((se.metadata as Obj | undefined)?.name)}-${i}`, str(e.address), e.ports, labelsOf(e.labels)));
  }
  return out;
}

export interface RunningApps {
  readonly workloads: readonly DemoWorkload[];
  close(): Promise<void>;
}

function replyOf(w: DemoWorkload): DemoReply {
  return { service: w.service, version: w.version, workload: w.name };
}

async function startGrpcApp(w: DemoWorkload): Promise<() => Promise<void>> {
  const server = new grpc.Server();
  const body = Buffer.from(JSON.stringify(replyOf(w)));
  server.register<Buffer, Buffer>(
    DEMO_METHOD,
    (_call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, body),
    (b) => b,
    (b) => b,
    'unary',
  );
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`${w.address}:${w.port}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  return () =>
    new Promise<void>((resolve) => {
      server.tryShutdown(() => resolve());
      setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, 1000).unref();
    });
}

async function startHttpApp(w: DemoWorkload): Promise<() => Promise<void>> {
  const body = JSON.stringify(replyOf(w));
  const server: HttpServer = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(w.port, w.address, () => resolve());
  });
  return () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

/** Starts every workload; a port already taken fails with its name. */
export async function startApps(workloads: readonly DemoWorkload[]): Promise<RunningApps> {
  const closers: (() => Promise<void>)[] = [];
  const closeAll = async (): Promise<void> => {
    await Promise.all(closers.splice(0).map((c) => c()));
  };
  try {
    for (const w of workloads) {
      const grpcPort = w.protocol === 'GRPC' || w.protocol === 'HTTP2' || w.protocol === 'GRPC-WEB';
      try {
        closers.push(await (grpcPort ? startGrpcApp(w) : startHttpApp(w)));
      } catch (err) {
        throw new Error(
          `workload ${w.name} (${w.service} ${w.version}) cannot listen on ${w.address}:${w.port}: ${(err as Error).message}`,
          { cause: err },
        );
      }
    }
  } catch (err) {
    await closeAll();
    throw err;
  }
  return { workloads, close: closeAll };
}
