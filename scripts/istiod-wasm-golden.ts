/**
 * Captures the real istiod's WasmPlugin output for every scenario under testdata/scenarios/wasm,
 * the oracle test/scenarios/wasm-parity.test.ts holds meshpilot to.
 *
 *   npx tsx scripts/istiod-wasm-golden.ts [scenario ...]
 *
 * istiod's file mode reads WasmPlugins but never translates them (the WasmPlugin → TrafficExtension
 * controller is only wired for Kubernetes), so each scenario runs against a real kube-apiserver
 * (../shared/kube/start-apiserver) with Istio's CRDs: namespaces shop/istio-system/other, then
 * base/*.yaml and plugins/<scenario>.yaml created in namespace/name order (istiod orders plugins
 * by creation time, then name), then istiod (../shared/istiod/run-kube). Each proxy of the scenario
 * connects over plaintext ADS with node metadata as Istio's agent sends it, subscribes to CDS and
 * LDS (wildcard) and then to ECDS for the names its HCMs' config_discovery filters use.
 * Output: testdata/scenarios/wasm/istiod/<scenario>.json — per proxy, the HTTP filters of each HCM
 * and the ECDS resources (proto3 JSON).
 * Env: ISTIOD_RUN_KUBE overrides the run-kube script; other env (ISTIOD_BIN …) passes through.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { create, fromBinary, toBinary, toJson, type JsonValue } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { parseAllDocuments } from 'yaml';
import { TypedExtensionConfigSchema } from '../src/gen/envoy/config/core/v3/extension_pb.js';
import { ListenerSchema } from '../src/gen/envoy/config/listener/v3/listener_pb.js';
import {
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { xdsJsonRegistry } from '../src/model/json-registry.js';
import { TypeUrl } from '../src/xds/type-urls.js';
import {
  ecdsNames,
  hcmFilters,
  wasmScenarioDigest,
  WASM_DIR,
  WASM_PROXIES,
  WASM_SCENARIOS,
  type WasmView,
} from '../test/scenarios/wasm-fixture.js';
import { adminRequest, startKubeCluster, type KubeCluster } from '../test/support/kube.js';
import { ADS_PATH } from '../test/support/raw-ads-client.js';
import type { NodeSpec } from '../test/support/scenario.js';
import { waitFor } from '../test/support/wait.js';
import { ISTIOD_MODULE, nodeFor, PROXY_ISTIO_VERSION, runScenarios, startIstiodKube } from './istiod-capture.js';

interface Obj {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
}

const PLURAL: Readonly<Record<string, string>> = {
  ServiceEntry: 'serviceentries',
  WorkloadEntry: 'workloadentries',
  Gateway: 'gateways',
  VirtualService: 'virtualservices',
  RequestAuthentication: 'requestauthentications',
  AuthorizationPolicy: 'authorizationpolicies',
  WasmPlugin: 'wasmplugins',
  Namespace: 'namespaces',
};

function objectsOf(file: string): Obj[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null && typeof o === 'object');
}

async function createObject(cluster: KubeCluster, o: Obj): Promise<void> {
  const base = o.apiVersion.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
  const ns = o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : '';
  const res = await adminRequest(cluster.env, 'POST', `${base}${ns}/${PLURAL[o.kind] ?? ''}`, o);
  if (res.status !== 201)
    throw new Error(`creating ${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}: HTTP ${res.status} ${res.body}`);
}

/** CDS + LDS wildcard, then ECDS for the HCMs' config_discovery names; the last LDS and ECDS answers. */
async function capture(addr: string, spec: NodeSpec): Promise<WasmView> {
  const client = new grpc.Client(addr, grpc.credentials.createInsecure());
  const call = client.makeBidiStreamRequest<DiscoveryRequest, DiscoveryResponse>(
    ADS_PATH,
    (r) => Buffer.from(toBinary(DiscoveryRequestSchema, r)),
    (b) => fromBinary(DiscoveryResponseSchema, b),
  );
  let first = true;
  const names = new Map<string, string[]>();
  const send = (typeUrl: string, resourceNames: string[], versionInfo = '', responseNonce = ''): void => {
    names.set(typeUrl, resourceNames);
    call.write(
      create(DiscoveryRequestSchema, { typeUrl, resourceNames, versionInfo, responseNonce, ...(first ? { node: nodeFor(spec) } : {}) }),
    );
    first = false;
  };
  const last = new Map<string, DiscoveryResponse>();
  let lastAt = Date.now();
  let failed: Error | undefined;
  let hcms: WasmView['hcms'] = {};
  call.on('error', (e: Error) => (failed = e));
  call.on('data', (resp: DiscoveryResponse) => {
    lastAt = Date.now();
    last.set(resp.typeUrl, resp);
    send(resp.typeUrl, names.get(resp.typeUrl) ?? [], resp.versionInfo, resp.nonce);
    if (resp.typeUrl === TypeUrl.Listener) {
      hcms = hcmFilters(resp.resources.map((a) => fromBinary(ListenerSchema, a.value)));
      const wanted = ecdsNames(hcms);
      if (wanted.length > 0)
        send(
          TypeUrl.ExtensionConfiguration,
          wanted,
          last.get(TypeUrl.ExtensionConfiguration)?.versionInfo,
          last.get(TypeUrl.ExtensionConfiguration)?.nonce,
        );
    }
  });
  send(TypeUrl.Cluster, []);
  send(TypeUrl.Listener, []);
  try {
    await waitFor(
      () => {
        if (failed) throw failed;
        const expected = [
          TypeUrl.Cluster,
          TypeUrl.Listener,
          ...((names.get(TypeUrl.ExtensionConfiguration) ?? []).length > 0 ? [TypeUrl.ExtensionConfiguration] : []),
        ];
        return expected.every((t) => last.has(t)) && Date.now() - lastAt > 1000;
      },
      { timeoutMs: 30_000, intervalMs: 100, description: `istiod config for ${spec.id}` },
    );
  } finally {
    call.end();
    call.cancel();
    client.close();
  }
  const registry = xdsJsonRegistry();
  const ecds: Record<string, JsonValue> = {};
  // By name: istiod's response order varies run to run; the golden files should not.
  const configs = (last.get(TypeUrl.ExtensionConfiguration)?.resources ?? []).map((a) => fromBinary(TypedExtensionConfigSchema, a.value));
  for (const ec of configs.sort((a, b) => a.name.localeCompare(b.name)))
    ecds[ec.name] = toJson(TypedExtensionConfigSchema, ec, { registry });
  return { hcms, ecds };
}

const key = (o: Obj): string => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

async function runScenario(name: string): Promise<void> {
  const started = Date.now();
  const cluster = await startKubeCluster();
  try {
    for (const ns of ['istio-system', 'shop', 'other'])
      await createObject(cluster, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await cluster.applyIstioCrds();
    const base = objectsOf(join(WASM_DIR, 'base', 'mesh.yaml'));
    const plugins = objectsOf(join(WASM_DIR, 'plugins', `${name}.yaml`)).sort((a, b) => key(a).localeCompare(key(b)));
    for (const o of base) await createObject(cluster, o);
    for (const o of plugins) await createObject(cluster, o);
    const istiod = await startIstiodKube(cluster.kubeconfigPath);
    try {
      // Let the translation controller and the first push settle.
      await new Promise((r) => setTimeout(r, 3000));
      const proxies: Record<string, WasmView> = {};
      for (const [proxy, spec] of Object.entries(WASM_PROXIES)) proxies[proxy] = await capture(istiod.grpcAddr, spec);
      const doc = {
        source: { istiod: ISTIOD_MODULE, ISTIO_VERSION: PROXY_ISTIO_VERSION, configSha256: wasmScenarioDigest(name) },
        proxies,
      };
      mkdirSync(join(WASM_DIR, 'istiod'), { recursive: true });
      writeFileSync(join(WASM_DIR, 'istiod', `${name}.json`), `${JSON.stringify(doc, undefined, 2)}\n`);
      const counts = Object.entries(proxies)
        .map(([p, v]) => `${p}: ${Object.keys(v.hcms).length} HCMs, ${Object.keys(v.ecds).length} ECDS`)
        .join('; ');
      const errors = istiod.log.filter((l) => /\t(error|warn)\t/.test(l) && /wasm|extension|traffic/i.test(l));
      console.log(
        `${name}: ${counts} (${Date.now() - started} ms)${errors.length ? `\n  istiod:\n  ${errors.slice(0, 8).join('\n  ')}` : ''}`,
      );
    } finally {
      await istiod.stop();
    }
  } finally {
    await cluster.stop();
  }
}

runScenarios(WASM_SCENARIOS, runScenario);
