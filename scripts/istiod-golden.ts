/**
 * Captures the real istiod's Envoy config for every proxy of the bookinfo scenario, the oracle that
 * test/scenarios/istiod-parity.test.ts holds meshpilot's generators to.
 *
 *   npx tsx scripts/istiod-golden.ts
 *
 * istiod: pilot-discovery built by /work/shared/istiod/build from the Go module
 * istio.io/istio@v0.0.0-20260827124520-eed52ebb66ad (master after 1.30; its VERSION file says 1.31),
 * started by /work/shared/istiod/run (file mode, no Kubernetes) on testdata/scenarios/bookinfo/config
 * as it is: istiod's file source skips kinds it has no schema for (the gateway's `kind: Secret`), so
 * no filtered copy is needed; the script waits until /debug/configz holds every Istio object.
 * Env: ISTIOD_RUN overrides the run script; other env (ISTIOD_BIN, …) passes through to it.
 *
 * Each proxy connects over plaintext ADS (SotW) with node metadata as Istio's agent sends it
 * (NAMESPACE, NAME, LABELS, CLUSTER_ID Kubernetes, ISTIO_VERSION 1.31.0, INTERCEPTION_MODE, MESH_ID; locality) and
 * subscribes as Envoy does: CDS and LDS wildcard, then EDS for the EDS clusters and RDS for the
 * route names the listeners reference, ACKing every response. Resources become proto3 JSON through
 * meshpilot's registry; Any types it does not know (Istio-proxy extensions, wasm, TypedStruct) keep
 * only their `@type`. Output: testdata/scenarios/bookinfo/istiod/<proxy>.json, sorted by name.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { create, createFileRegistry, createRegistry, fromBinary, toBinary, toJson, type DescMessage, type JsonObject, type JsonValue, type Registry } from '@bufbuild/protobuf';
import { anyUnpack, FileDescriptorProtoSchema, type Any } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import { parseAllDocuments } from 'yaml';
import { NodeSchema } from '../src/gen/envoy/config/core/v3/base_pb.js';
import { HttpConnectionManagerSchema } from '../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { DiscoveryRequestSchema, DiscoveryResponseSchema, type DiscoveryRequest, type DiscoveryResponse } from '../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { xdsJsonRegistry } from '../src/xds/json-registry.js';
import { BOOKINFO_DIR, BOOKINFO_PROXIES } from '../test/scenarios/bookinfo-fixture.js';
import { configDigest } from '../test/scenarios/istiod-compare.js';
import { trackChild } from '../test/support/cleanup.js';
import { freePorts } from '../test/support/ports.js';
import type { NodeSpec } from '../test/support/scenario.js';
import { waitFor } from '../test/support/wait.js';
import { ADS_PATH } from '../test/support/raw-ads-client.js';
import { SCHEMA_BY_TYPE, TYPE } from '../test/support/xds-resources.js';

const ISTIOD_MODULE = 'istio.io/istio@v0.0.0-20260827124520-eed52ebb66ad';
/** The proxies claim istiod's own release line, so no old-proxy compatibility branch applies. */
const PROXY_ISTIO_VERSION = '1.31.0';
const RUN = process.env.ISTIOD_RUN ?? '/work/shared/istiod/run';
const OUT_DIR = join(BOOKINFO_DIR, 'istiod');

/** Node metadata as pilot-agent sends it for a Kubernetes pod (the subset istiod's generators read). */
function nodeFor(spec: NodeSpec): ReturnType<typeof create<typeof NodeSchema>> {
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

// ---- proto3 JSON with opaque Anys ----

/** Every Any type URL inside `value` (recursing into the Anys the registry can unpack) it cannot unpack. */
function unknownAnyTypes(value: unknown, registry: Registry, out: Set<string>): void {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return;
  if (Array.isArray(value)) {
    for (const v of value) unknownAnyTypes(v, registry, out);
    return;
  }
  const o = value as Record<string, unknown>;
  if (o.$typeName === 'google.protobuf.Any') {
    const inner = anyUnpack(o as unknown as Any, registry);
    if (inner) unknownAnyTypes(inner, registry, out);
    else out.add((o as unknown as Any).typeUrl);
    return;
  }
  for (const v of Object.values(o)) unknownAnyTypes(v, registry, out);
}

/** An empty message named after the type URL: its JSON is `{"@type": url}`, its bytes are skipped. */
function placeholder(typeUrl: string): Registry {
  const full = typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
  const dot = full.lastIndexOf('.');
  const proto = create(FileDescriptorProtoSchema, {
    name: `opaque/${full}.proto`,
    package: dot < 0 ? '' : full.slice(0, dot),
    syntax: 'proto3',
    messageType: [{ name: full.slice(dot + 1) }],
  });
  return createFileRegistry(proto, () => undefined);
}

/** Proto3 JSON of `msg`; Anys outside meshpilot's registry keep only their `@type` (and are listed). */
function toOpaqueJson(schema: DescMessage, msg: never, base: Registry, opaque: Set<string>): JsonValue {
  const unknown = new Set<string>();
  unknownAnyTypes(msg, base, unknown);
  for (const t of unknown) opaque.add(t);
  const registry = unknown.size === 0 ? base : createRegistry(base, ...[...unknown].map(placeholder));
  return toJson(schema, msg, { registry });
}

// ---- ADS ----

interface Captured {
  readonly byType: Map<string, DiscoveryResponse>;
}

/** Subscribes like Envoy (CDS, LDS wildcard; then EDS, RDS by name), ACKs everything, returns the last response per type. */
async function capture(addr: string, spec: NodeSpec): Promise<Captured> {
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
      const eds = resp.resources.map((a) => fromBinary(SCHEMA_BY_TYPE[TYPE.CDS], a.value)).filter((c) => c.edsClusterConfig).map((c) => c.edsClusterConfig?.serviceName || c.name);
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
function configObjects(dir: string): { istio: string[]; skipped: string[] } {
  const istio: string[] = [];
  const skipped: string[] = [];
  for (const f of readdirSync(dir).filter((n) => /\.ya?ml$/.test(n)).sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) {
      const o = doc.toJS() as { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } } | null;
      if (!o?.kind) continue;
      const id = `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
      (o.apiVersion?.includes('istio.io/') ? istio : skipped).push(id);
    }
  }
  return { istio, skipped };
}

async function startIstiod(expected: readonly string[]): Promise<{ grpcAddr: string; stop: () => Promise<void>; log: string[] }> {
  const [g, h, m] = await freePorts(3);
  const grpcAddr = `127.0.0.1:${g}`;
  const httpAddr = `127.0.0.1:${h}`;
  // The scenario dir as is: istiod's file source skips kinds it has no schema for (the Secret) at debug level.
  const args = ['discovery', '--configDir', join(BOOKINFO_DIR, 'config'), '--grpcAddr', grpcAddr, '--httpAddr', httpAddr, '--monitoringAddr', `127.0.0.1:${m}`];
  const child = spawn(RUN, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PILOT_MAX_REQUESTS_PER_SECOND: '1000' } });
  trackChild(child);
  const log: string[] = [];
  for (const s of [child.stdout, child.stderr]) s.on('data', (d: Buffer) => log.push(...d.toString().split('\n').filter((x) => x !== '')));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let dead = false;
  void exited.then(() => (dead = true));
  await waitFor(
    async () => {
      if (dead) throw new Error(`istiod exited:\n${log.slice(-30).join('\n')}`);
      const res = await fetch(`http://${httpAddr}/ready`);
      return res.status === 200;
    },
    { timeoutMs: 30 * 60_000, intervalMs: 250, description: 'istiod /ready (the first run builds it: 15-20 min)' },
  );
  // Ready does not promise the directory is loaded: wait until istiod holds every Istio object of it.
  await waitFor(
    async () => {
      const got = (await (await fetch(`http://${httpAddr}/debug/configz`)).json()) as { kind: string; metadata: { name: string; namespace: string } }[];
      const ids = new Set(got.map((c) => `${c.kind}/${c.metadata.namespace}/${c.metadata.name}`));
      return expected.every((id) => ids.has(id));
    },
    { timeoutMs: 30_000, intervalMs: 250, description: `istiod holding the ${expected.length} objects of the config dir (an invalid one blocks the whole dir)` },
  );
  return {
    grpcAddr,
    log,
    stop: async () => {
      if (!dead) child.kill('SIGTERM');
      await exited;
    },
  };
}

function byName(a: JsonValue, b: JsonValue): number {
  const k = (v: JsonValue): string => {
    const o = v as JsonObject;
    return String(o.name ?? o.clusterName ?? '');
  };
  return k(a).localeCompare(k(b));
}

async function main(): Promise<void> {
  const started = Date.now();
  const digest = configDigest(join(BOOKINFO_DIR, 'config'));
  const objects = configObjects(join(BOOKINFO_DIR, 'config'));
  const istiod = await startIstiod(objects.istio);
  const readyMs = Date.now() - started;
  const base = xdsJsonRegistry();
  const opaque = new Set<string>();
  try {
    mkdirSync(OUT_DIR, { recursive: true });
    for (const [name, spec] of Object.entries(BOOKINFO_PROXIES)) {
      const { byType } = await capture(istiod.grpcAddr, spec);
      const section = (t: keyof typeof SCHEMA_BY_TYPE): JsonValue[] => {
        const schema = SCHEMA_BY_TYPE[t];
        return (byType.get(t)?.resources ?? []).map((a) => toOpaqueJson(schema, fromBinary(schema, a.value) as never, base, opaque)).sort(byName);
      };
      const doc = {
        source: { istiod: ISTIOD_MODULE, node: spec.id, ISTIO_VERSION: PROXY_ISTIO_VERSION, configSha256: digest },
        listeners: section(TYPE.LDS),
        routes: section(TYPE.RDS),
        clusters: section(TYPE.CDS),
        endpoints: section(TYPE.EDS),
      };
      writeFileSync(join(OUT_DIR, `${name}.json`), `${JSON.stringify(doc, undefined, 2)}\n`);
      console.log(`${name}: ${doc.listeners.length} listeners, ${doc.routes.length} routes, ${doc.clusters.length} clusters, ${doc.endpoints.length} endpoints`);
    }
  } finally {
    await istiod.stop();
  }
  const warnings = istiod.log.filter((l) => /\twarn\t|\terror\t/.test(l));
  if (warnings.length > 0) console.log(`istiod warnings/errors:\n${warnings.join('\n')}`);
  console.log(`skipped by istiod's file source (no Istio schema): ${objects.skipped.join(', ') || 'none'}`);
  console.log(`opaque Any types (kept as {"@type"}): ${[...opaque].sort().join(', ') || 'none'}`);
  console.log(`capture took ${Date.now() - started} ms (istiod ready after ${readyMs} ms)`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
