/**
 * Everything meshpilot would send one proxy, handed to the real Envoy in `--mode validate`: the
 * listeners (RDS replaced by the RouteConfiguration it names, inline), the clusters as sent, each
 * ClusterLoadAssignment as a static cluster's load assignment, and the SDS secrets. Envoy builds
 * every listener, filter chain, filter, route and cluster through its own factories and proto
 * validation (no sockets bound, nothing dialled), so a resource it would NACK fails here with
 * Envoy's own error text.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { toJson, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { ClusterSchema } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import { ClusterLoadAssignmentSchema } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { SecretSchema } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import { xdsJsonRegistry } from '../../src/model/json-registry.js';
import { ENVOY_BINARY } from './envoy.js';
import type { GeneratedConfig } from './scenario.js';
import { tempDir } from './temp-dir.js';

const HCM_TYPE = 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';

const isObj = (v: JsonValue | undefined): v is JsonObject => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Replaces every HCM's `rds` with the RouteConfiguration of that name (an empty one when none was generated). */
function inlineRoutes(listener: JsonObject, routes: ReadonlyMap<string, JsonObject>): JsonObject {
  const visit = (v: JsonValue): JsonValue => {
    if (Array.isArray(v)) return v.map(visit);
    if (!isObj(v)) return v;
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) out[k] = visit(x);
    if (out['@type'] === HCM_TYPE && isObj(out.rds)) {
      const name = String(out.rds.routeConfigName ?? '');
      delete out.rds;
      out.routeConfig = routes.get(name) ?? { name };
    }
    return out;
  };
  return visit(listener) as JsonObject;
}

/** A bootstrap whose static resources are the proxy's whole config (see the file comment). */
export function validationBootstrap(nodeId: string, c: GeneratedConfig): JsonObject {
  const registry = xdsJsonRegistry();
  const routes = new Map(c.routes.map((r) => [r.name, toJson(RouteConfigurationSchema, r, { registry }) as JsonObject]));
  const pipe = (path: string): JsonObject => ({ pipe: { path } });
  const h2 = {
    'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
      '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
      explicitHttpConfig: { http2ProtocolOptions: {} },
    },
  };
  const grpcCluster = (name: string, path: string): JsonObject => ({
    name,
    type: 'STATIC',
    typedExtensionProtocolOptions: h2,
    loadAssignment: { clusterName: name, endpoints: [{ lbEndpoints: [{ endpoint: { address: pipe(path) } }] }] },
  });
  const endpointClusters = c.endpoints.map((cla) => ({
    name: `eds-as-static|${cla.clusterName}`,
    type: 'STATIC',
    loadAssignment: toJson(ClusterLoadAssignmentSchema, cla, { registry }) as JsonObject,
  }));
  return {
    node: { id: nodeId, cluster: 'validate' },
    dynamicResources: {
      adsConfig: { apiType: 'DELTA_GRPC', transportApiVersion: 'V3', grpcServices: [{ envoyGrpc: { clusterName: 'xds-grpc' } }] },
    },
    staticResources: {
      listeners: c.listeners.map((l) => inlineRoutes(toJson(ListenerSchema, l, { registry }) as JsonObject, routes)),
      clusters: [
        grpcCluster('xds-grpc', '/nonexistent/XDS'),
        grpcCluster('sds-grpc', '/nonexistent/SDS'),
        ...c.clusters.map((cl) => toJson(ClusterSchema, cl, { registry }) as JsonObject),
        ...endpointClusters,
      ],
      secrets: c.secrets.map((s) => toJson(SecretSchema, s, { registry }) as JsonObject),
    },
  };
}

export interface ValidationResult {
  readonly ok: boolean;
  /** Envoy's output (its error names the resource and the field). */
  readonly output: string;
}

/** Runs `envoy --mode validate` on the proxy's whole config (or on `bootstrap` when given). */
export async function envoyValidate(
  nodeId: string,
  c: GeneratedConfig,
  bootstrap: JsonObject = validationBootstrap(nodeId, c),
): Promise<ValidationResult> {
  const dir = tempDir('meshpilot-envoy-validate-');
  try {
    const file = join(dir.path, 'bootstrap.json');
    writeFileSync(file, JSON.stringify(bootstrap));
    // Output to a file, not a pipe: Node's child pipes are sockets, which an access log's
    // /dev/stdout cannot open (ENXIO), while a proxy's stdout in a pod can.
    const outFile = join(dir.path, 'envoy.out');
    const fd = openSync(outFile, 'w');
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(ENVOY_BINARY, ['--mode', 'validate', '-c', file, '--log-level', 'error', '--disable-hot-restart'], {
        stdio: ['ignore', fd, fd],
      });
      child.once('error', reject);
      child.once('exit', resolve);
    }).finally(() => closeSync(fd));
    return { ok: code === 0, output: readFileSync(outFile, 'utf8') };
  } finally {
    await dir.remove();
  }
}
