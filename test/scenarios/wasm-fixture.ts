/**
 * The WasmPlugin scenarios (testdata/scenarios/wasm): one shared mesh (base/) plus one file of
 * plugins each. meshpilot's side of the istiod comparison: for every proxy, the HTTP filter list of
 * each HCM (names, with config_discovery details for ECDS filters) and the ECDS resources its
 * Wasm filters name, as proto3 JSON.
 */
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromBinary, toJson, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import type { Listener } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { ExtensionConfigSourceSchema } from '../../src/gen/envoy/config/core/v3/config_source_pb.js';
import { TypedExtensionConfigSchema } from '../../src/gen/envoy/config/core/v3/extension_pb.js';
import { HttpConnectionManagerSchema } from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { registerEnvoyGenerators } from '../../src/networking/envoy-generators.js';
import { configCredentials } from '../../src/networking/gateway/config-credentials.js';
import { pushRequest } from '../../src/model/push-request.js';
import { silentLogger } from '../../src/util/log.js';
import { GeneratorRegistry } from '../../src/xds/generator.js';
import { xdsJsonRegistry } from '../../src/model/json-registry.js';
import { TypeUrl } from '../../src/xds/type-urls.js';
import { REPO_ROOT } from '../support/paths.js';
import { generateFor, loadScenario, proxyFor, type NodeSpec } from '../support/scenario.js';

export const WASM_DIR = join(REPO_ROOT, 'testdata/scenarios/wasm');
export const WASM_SCENARIOS = readdirSync(join(WASM_DIR, 'plugins'))
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => f.slice(0, -'.yaml'.length))
  .sort();

export const WASM_PROXIES: Readonly<Record<string, NodeSpec>> = {
  web: { id: 'sidecar~10.1.0.10~web-1.shop~shop.svc.cluster.local', labels: { app: 'web', 'security.istio.io/tlsMode': 'istio' } },
  api: { id: 'sidecar~10.1.0.20~api-1.shop~shop.svc.cluster.local', labels: { app: 'api', 'security.istio.io/tlsMode': 'istio' } },
  gateway: {
    id: 'router~10.2.0.1~istio-ingressgateway-1.istio-system~istio-system.svc.cluster.local',
    labels: { istio: 'ingressgateway', app: 'istio-ingressgateway' },
  },
};

/** sha256 of the scenario's inputs (base + its plugins): a golden file names the config it was made from. */
export function wasmScenarioDigest(scenario: string): string {
  const h = createHash('sha256');
  for (const f of [join(WASM_DIR, 'base', 'mesh.yaml'), join(WASM_DIR, 'plugins', `${scenario}.yaml`)]) h.update(readFileSync(f));
  return h.digest('hex');
}

/** What the comparison looks at for one proxy. */
export interface WasmView {
  /** `<listener>|<chain name or match>` → the HCM's filters: name, and config_discovery when it has one. */
  readonly hcms: Record<string, JsonValue[]>;
  /** ECDS resources by name (proto3 JSON of the TypedExtensionConfig). */
  readonly ecds: Record<string, JsonValue>;
}

/** The HCMs of some listeners, as the view keeps them. */
export function hcmFilters(listeners: readonly Listener[]): Record<string, JsonValue[]> {
  const out: Record<string, JsonValue[]> = {};
  const registry = xdsJsonRegistry();
  for (const l of listeners) {
    for (const fc of [...l.filterChains, ...(l.defaultFilterChain ? [l.defaultFilterChain] : [])]) {
      for (const f of fc.filters) {
        if (f.configType.case !== 'typedConfig') continue;
        const hcm = anyUnpack(f.configType.value, HttpConnectionManagerSchema);
        if (!hcm) continue;
        // Inbound chains go by port (istiod and meshpilot name them differently), others by name or match.
        const m = fc.filterChainMatch;
        const key = `${l.name}|${m?.destinationPort !== undefined || !fc.name ? chainKey(m?.destinationPort, m?.transportProtocol, m?.applicationProtocols) : fc.name}`;
        out[key] = hcm.httpFilters.map((h) =>
          h.configType.case === 'configDiscovery'
            ? ({ name: h.name, configDiscovery: toJson(ExtensionConfigSourceSchema, h.configType.value, { registry }) } as JsonObject)
            : h.name,
        );
      }
    }
  }
  return out;
}

const chainKey = (port: number | undefined, transport: string | undefined, alpn: readonly string[] | undefined): string =>
  `port=${port ?? ''},transport=${transport ?? ''},alpn=${(alpn ?? []).join('+')}`;

/** Names of the ECDS filters in the views' HCMs. */
export function ecdsNames(hcms: Record<string, JsonValue[]>): string[] {
  const names = new Set<string>();
  for (const fs of Object.values(hcms))
    for (const f of fs) if (typeof f === 'object' && f !== null && !Array.isArray(f) && typeof f.name === 'string') names.add(f.name);
  return [...names].sort();
}

/** meshpilot's view of every proxy of a scenario (base + its plugins file, through the file source). */
export async function generateWasmScenario(scenario: string): Promise<Map<string, WasmView>> {
  const dir = mkdtempSync(join(tmpdir(), 'wasm-scenario-'));
  try {
    cpSync(join(WASM_DIR, 'base'), dir, { recursive: true });
    cpSync(join(WASM_DIR, 'plugins', `${scenario}.yaml`), join(dir, `${scenario}.yaml`));
    const { push } = await loadScenario(dir);
    const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
      logger: silentLogger,
      credentials: (p) => configCredentials(p.config, silentLogger),
    });
    const out = new Map<string, WasmView>();
    for (const [name, spec] of Object.entries(WASM_PROXIES)) {
      const proxy = proxyFor(spec);
      const hcms = hcmFilters(generateFor(push, generators, proxy).listeners);
      const names = ecdsNames(hcms);
      const gen = generators.lookup(proxy, TypeUrl.ExtensionConfiguration);
      const resources = gen
        ? gen.generate(
            proxy,
            { typeUrl: TypeUrl.ExtensionConfiguration, names: new Set(names), wildcard: false },
            push,
            pushRequest({ full: true, reason: 'config', start: 0 }),
          )
        : [];
      const ecds: Record<string, JsonValue> = {};
      for (const r of resources)
        ecds[r.name] = toJson(TypedExtensionConfigSchema, fromBinary(TypedExtensionConfigSchema, r.value), { registry: xdsJsonRegistry() });
      out.set(name, { hcms, ecds });
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
