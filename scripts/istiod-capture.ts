/**
 * Capturing the real istiod's Envoy config over ADS, shared by the golden scripts
 * (scripts/istiod-*golden*.ts): the launcher, the ADS capture and the scenario selection.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { create, fromBinary, toBinary, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import { parseAllDocuments } from 'yaml';
import { NodeSchema } from '../src/gen/envoy/config/core/v3/base_pb.js';
import { HttpConnectionManagerSchema } from '../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import {
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { trackChild } from '../test/support/cleanup.js';
import { freePorts } from '../test/support/ports.js';
import type { NodeSpec } from '../test/support/scenario.js';
import { waitFor } from '../test/support/wait.js';
import { errorMessage } from '../src/util/errors.js';
import { ADS_PATH } from '../test/support/raw-ads-client.js';
import { SCHEMA_BY_TYPE, TYPE } from '../test/support/xds-resources.js';

export { toOpaqueJson } from '../test/support/opaque-json.js';

export const ISTIOD_MODULE = 'istio.io/istio@v0.0.0-20260827124520-eed52ebb66ad';
/** The proxies claim istiod's own release line, so no old-proxy compatibility branch applies. */
export const PROXY_ISTIO_VERSION = '1.31.0';
/** Read when istiod starts, not at import: a golden script may set ISTIOD_RUN (a wrapper) after importing this module. */
const runScript = (): string => process.env.ISTIOD_RUN ?? '/work/shared/istiod/run';

/** Node metadata as pilot-agent sends it for a Kubernetes pod (the subset istiod's generators read). */
export function nodeFor(spec: NodeSpec): ReturnType<typeof create<typeof NodeSchema>> {
  const [, , pod = '', domain = ''] = spec.id.split('~');
  const namespace = domain.split('.')[0] ?? '';
  const metadata: JsonObject = {
    NAMESPACE: namespace,
    NAME: pod.split('.')[0] ?? pod,
    LABELS: spec.labels ?? {},
    CLUSTER_ID: 'Kubernetes',
    ISTIO_VERSION: PROXY_ISTIO_VERSION,
    INTERCEPTION_MODE: 'REDIRECT',
    MESH_ID: 'cluster.local',
    ...(spec.metadata ?? {}),
  };
  return create(NodeSchema, {
    id: spec.id,
    cluster: `${spec.labels?.app ?? 'unknown'}.${namespace}`,
    metadata,
    userAgentName: 'envoy',
    ...(spec.locality ? { locality: { region: spec.locality.region ?? '', zone: spec.locality.zone ?? '' } } : {}),
  });
}

// ---- ADS ----

export interface Captured {
  readonly byType: Map<string, DiscoveryResponse>;
}

/** Subscribes like Envoy (CDS, LDS wildcard; then EDS, RDS by name), ACKs everything, returns the last response per type. */
export async function capture(addr: string, spec: NodeSpec): Promise<Captured> {
  const client = new grpc.Client(addr, grpc.credentials.createInsecure());
  const call = client.makeBidiStreamRequest<DiscoveryRequest, DiscoveryResponse>(
    ADS_PATH,
    (r) => Buffer.from(toBinary(DiscoveryRequestSchema, r)),
    (b) => fromBinary(DiscoveryResponseSchema, b),
  );
  const node = nodeFor(spec);
  let first = true;
  const names = new Map<string, string[]>();
  const send = (typeUrl: string, resourceNames: string[], versionInfo = '', responseNonce = ''): void => {
    names.set(typeUrl, resourceNames);
    call.write(create(DiscoveryRequestSchema, { typeUrl, resourceNames, versionInfo, responseNonce, ...(first ? { node } : {}) }));
    first = false;
  };
  const byType = new Map<string, DiscoveryResponse>();
  let lastAt = Date.now();
  let failed: Error | undefined;
  call.on('error', (e: Error) => (failed = e));
  call.on('data', (resp: DiscoveryResponse) => {
    lastAt = Date.now();
    byType.set(resp.typeUrl, resp);
    send(resp.typeUrl, names.get(resp.typeUrl) ?? [], resp.versionInfo, resp.nonce);
    if (resp.typeUrl === TYPE.CDS) {
      const eds = resp.resources
        .map((a) => fromBinary(SCHEMA_BY_TYPE[TYPE.CDS], a.value))
        .filter((c) => c.edsClusterConfig)
        .map((c) => c.edsClusterConfig?.serviceName || c.name);
      if (!same(eds, names.get(TYPE.EDS))) send(TYPE.EDS, eds, byType.get(TYPE.EDS)?.versionInfo, byType.get(TYPE.EDS)?.nonce);
    }
    if (resp.typeUrl === TYPE.LDS) {
      const rds = routeNames(resp);
      if (!same(rds, names.get(TYPE.RDS))) send(TYPE.RDS, rds, byType.get(TYPE.RDS)?.versionInfo, byType.get(TYPE.RDS)?.nonce);
    }
  });
  send(TYPE.CDS, []);
  send(TYPE.LDS, []);
  try {
    // Done when every subscribed type has answered and the stream has been quiet for a moment.
    await waitFor(
      () => {
        if (failed) throw failed;
        const expected = [TYPE.CDS, TYPE.LDS, ...[TYPE.EDS, TYPE.RDS].filter((t) => (names.get(t) ?? []).length > 0)];
        return expected.every((t) => byType.has(t)) && Date.now() - lastAt > 1000;
      },
      { timeoutMs: 30_000, intervalMs: 100, description: `istiod config for ${spec.id}` },
    );
  } finally {
    call.end();
    call.cancel();
    client.close();
  }
  return { byType };
}

/**
 * Subscribes like a proxyless gRPC client: one type, by name only (gRPC never asks for a wildcard),
 * ACKs, and returns the last response once it has answered and the stream has been quiet for a moment.
 */
export async function captureNamed(
  addr: string,
  spec: NodeSpec,
  typeUrl: string,
  resourceNames: readonly string[],
): Promise<DiscoveryResponse> {
  const client = new grpc.Client(addr, grpc.credentials.createInsecure());
  const call = client.makeBidiStreamRequest<DiscoveryRequest, DiscoveryResponse>(
    ADS_PATH,
    (r) => Buffer.from(toBinary(DiscoveryRequestSchema, r)),
    (b) => fromBinary(DiscoveryResponseSchema, b),
  );
  let last: DiscoveryResponse | undefined;
  let lastAt = Date.now();
  let failed: Error | undefined;
  call.on('error', (e: Error) => (failed = e));
  call.on('data', (resp: DiscoveryResponse) => {
    lastAt = Date.now();
    last = resp;
    call.write(
      create(DiscoveryRequestSchema, {
        typeUrl,
        resourceNames: [...resourceNames],
        versionInfo: resp.versionInfo,
        responseNonce: resp.nonce,
      }),
    );
  });
  call.write(create(DiscoveryRequestSchema, { typeUrl, resourceNames: [...resourceNames], node: nodeFor(spec) }));
  try {
    await waitFor(
      () => {
        if (failed) throw failed;
        return last !== undefined && Date.now() - lastAt > 1000;
      },
      { timeoutMs: 30_000, intervalMs: 100, description: `${typeUrl} by name for ${spec.id}` },
    );
  } finally {
    call.end();
    call.cancel();
    client.close();
  }
  return last!;
}

function same(a: readonly string[], b: readonly string[] | undefined): boolean {
  if (b === undefined || a.length !== b.length) return false;
  const sb = [...b].sort();
  return [...a].sort().every((x, i) => x === sb[i]);
}

/** RDS names referenced by the HCMs of an LDS response. */
function routeNames(resp: DiscoveryResponse): string[] {
  const out = new Set<string>();
  for (const a of resp.resources) {
    const l = fromBinary(SCHEMA_BY_TYPE[TYPE.LDS], a.value);
    for (const fc of [...l.filterChains, ...(l.defaultFilterChain ? [l.defaultFilterChain] : [])]) {
      for (const f of fc.filters) {
        if (f.configType.case !== 'typedConfig') continue;
        const hcm = anyUnpack(f.configType.value, HttpConnectionManagerSchema);
        if (hcm?.routeSpecifier.case === 'rds') out.add(hcm.routeSpecifier.value.routeConfigName);
      }
    }
  }
  return [...out].sort();
}

// ---- istiod ----

/** `Kind/namespace/name` of the Istio objects in the config dir, and of the other objects istiod's file source skips. */
export function configObjects(dir: string): { istio: string[]; skipped: string[] } {
  const istio: string[] = [];
  const skipped: string[] = [];
  for (const f of readdirSync(dir)
    .filter((n) => /\.ya?ml$/.test(n))
    .sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) {
      const o = doc.toJS() as { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } } | null;
      if (!o?.kind) continue;
      const id = `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
      (o.apiVersion?.includes('istio.io/') ? istio : skipped).push(id);
    }
  }
  return { istio, skipped };
}

/** A running istiod started by the shared run scripts. */
export interface RunningIstiod {
  readonly grpcAddr: string;
  readonly httpAddr: string;
  readonly log: string[];
  stop(): Promise<void>;
}

/**
 * Runs `script discovery <args> --grpcAddr … --httpAddr … --monitoringAddr …` on free loopback
 * ports (new ADS streams admitted at 1000/s, so captures are not paced) and waits for /ready.
 */
async function launchIstiod(
  script: string,
  args: readonly string[],
  env: Readonly<Record<string, string>>,
  readyTimeoutMs: number,
  readyWhat: string,
): Promise<RunningIstiod & { dead(): boolean }> {
  const [g, h, m] = await freePorts(3);
  const grpcAddr = `127.0.0.1:${g}`;
  const httpAddr = `127.0.0.1:${h}`;
  const child = spawn(
    script,
    ['discovery', ...args, '--grpcAddr', grpcAddr, '--httpAddr', httpAddr, '--monitoringAddr', `127.0.0.1:${m}`],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PILOT_MAX_REQUESTS_PER_SECOND: '1000', ...env },
    },
  );
  trackChild(child);
  const log: string[] = [];
  for (const s of [child.stdout, child.stderr])
    s.on('data', (d: Buffer) =>
      log.push(
        ...d
          .toString()
          .split('\n')
          .filter((x) => x !== ''),
      ),
    );
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let dead = false;
  void exited.then(() => (dead = true));
  try {
    // An istiod that exits at start ends the wait at once, and no probe outlives two seconds: a
    // probe hanging on a half-open port would otherwise hold the wait past its own time-out.
    const exitedEarly = exited.then(() => {
      throw new Error(`istiod exited:\n${log.slice(-30).join('\n')}`);
    });
    // Handled here too: istiod's exit after a successful wait (or after the time-out) is no error.
    exitedEarly.catch(() => {});
    await Promise.race([
      exitedEarly,
      waitFor(
        async () => (await fetch(`http://${httpAddr}/ready`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined))?.status === 200,
        { timeoutMs: readyTimeoutMs, intervalMs: 250, description: readyWhat },
      ),
    ]);
  } catch (err) {
    // Its log says why it is not ready (a remote cluster it cannot read, a lease, …).
    if (!dead) child.kill('SIGTERM');
    const problems = log.filter((l) => /\t(error|warn)\t/.test(l) && !/is not ready/.test(l)).slice(-20);
    throw new Error(
      `${errorMessage(err)}\n--- istiod errors and warnings ---\n${problems.join('\n')}\n--- istiod log tail ---\n${log.slice(-10).join('\n')}`,
      {
        cause: err,
      },
    );
  }
  return {
    grpcAddr,
    httpAddr,
    log,
    dead: () => dead,
    stop: async () => {
      if (!dead) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The real istiod in file mode on `configDir`, once it holds every object of `expected` (kind/ns/name). */
export async function startIstiod(configDir: string, expected: readonly string[]): Promise<RunningIstiod> {
  // The scenario dir as is: istiod's file source skips kinds it has no schema for (the Secret) at debug level.
  const istiod = await launchIstiod(
    runScript(),
    ['--configDir', configDir],
    {},
    30 * 60_000,
    'istiod /ready (the first run builds it: 15-20 min)',
  );
  // Ready does not promise the directory is loaded: wait until istiod holds every Istio object of it.
  await waitFor(
    async () => {
      const got = (await (await fetch(`http://${istiod.httpAddr}/debug/configz`)).json()) as {
        kind: string;
        metadata: { name: string; namespace: string };
      }[];
      const ids = new Set(got.map((c) => `${c.kind}/${c.metadata.namespace}/${c.metadata.name}`));
      return expected.every((id) => ids.has(id));
    },
    {
      timeoutMs: 30_000,
      intervalMs: 250,
      description: `istiod holding the ${expected.length} objects of the config dir (an invalid one blocks the whole dir)`,
    },
  );
  return istiod;
}

export function byName(a: JsonValue, b: JsonValue): number {
  const k = (v: JsonValue): string => {
    const o = v as JsonObject;
    return String(o.name ?? o.clusterName ?? '');
  };
  return k(a).localeCompare(k(b));
}

/**
 * Starts the real istiod against a Kubernetes API server (../shared/istiod/run-kube, or
 * ISTIOD_RUN_KUBE) on free loopback ports and waits for /ready. `env` adds istiod settings.
 */
export function startIstiodKube(kubeconfig: string, env: Readonly<Record<string, string>> = {}): Promise<RunningIstiod> {
  return launchIstiod(
    process.env.ISTIOD_RUN_KUBE ?? '/work/shared/istiod/run-kube',
    ['--kubeconfig', kubeconfig],
    env,
    120_000,
    'istiod /ready',
  );
}

/** The scenarios named on the command line, all of `known` when none is; an unknown name is an error (not silently skipped). */
export function chosenScenarios(known: readonly string[], args: readonly string[] = process.argv.slice(2)): string[] {
  const unknown = args.filter((a) => !known.includes(a));
  if (unknown.length > 0) throw new Error(`unknown scenario ${unknown.join(', ')}; known: ${known.join(', ')}`);
  return args.length > 0 ? [...args] : [...known];
}

/** A golden script's main: `run` for each chosen scenario in turn; exit 0 when all were captured, 1 at the first failure. */
export function runScenarios(known: readonly string[], run: (name: string) => Promise<void>): void {
  const all = async (): Promise<void> => {
    for (const name of chosenScenarios(known)) await run(name);
  };
  all().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
