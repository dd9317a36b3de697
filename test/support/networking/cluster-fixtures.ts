import assert from 'node:assert/strict';
import { create, equals, fromBinary, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { ClusterSchema, type Cluster } from '../../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { NodeSchema } from '../../../src/gen/envoy/config/core/v3/base_pb.js';
import { UpstreamTlsContextSchema, type UpstreamTlsContext } from '../../../src/gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import {
  HttpProtocolOptionsSchema,
  type HttpProtocolOptions,
} from '../../../src/gen/envoy/extensions/upstreams/http/v3/http_protocol_options_pb.js';
import type { MeshConfig } from '../../../src/config/mesh/mesh-config.js';
import { parseProxy, type Proxy } from '../../../src/model/proxy.js';
import { PushContext } from '../../../src/model/push-context.js';
import { assertValid } from '../../../src/xds/pgv/index.js';
import { envoyValidationRegistry } from '../../../src/model/json-registry.js';
import type { MeshTrafficFields } from '../../../src/networking/traffic-policy.js';
import { HTTP_PROTOCOL_OPTIONS } from '../../../src/networking/cluster/cluster-draft.js';
import { pushOf } from '../config-fixture.js';

/** Test-only helpers: config goes through the real validation path (MemorySource → ConfigStore → PushContext). */

const registry = envoyValidationRegistry();

export function pushFor(objects: readonly Record<string, unknown>[], mesh: Partial<MeshConfig> & MeshTrafficFields = {}): PushContext {
  return pushOf(objects, mesh);
}

export function proxyOf(
  type: 'sidecar' | 'router',
  opts: { ip?: string; namespace?: string; labels?: Record<string, string>; locality?: [string, string, string] } = {},
): Proxy {
  const ns = opts.namespace ?? 'default';
  const [region, zone, subZone] = opts.locality ?? ['', '', ''];
  const r = parseProxy(
    create(NodeSchema, {
      id: `${type}~${opts.ip ?? '10.0.0.1'}~client-abc.${ns}~${ns}.svc.cluster.local`,
      metadata: { LABELS: opts.labels ?? { app: 'client' } },
      locality: { region, zone, subZone },
    }),
  );
  assert.ok(r.ok);
  return r.value;
}

export interface EntryOptions {
  readonly namespace?: string;
  readonly resolution?: string;
  readonly location?: string;
  readonly endpoints?: readonly Record<string, unknown>[];
  readonly workloadSelector?: Record<string, string>;
}

export function serviceEntry(
  name: string,
  host: string,
  ports: readonly Record<string, unknown>[],
  opts: EntryOptions = {},
): Record<string, unknown> {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name, namespace: opts.namespace ?? 'default' },
    spec: {
      hosts: [host],
      location: opts.location ?? 'MESH_INTERNAL',
      resolution: opts.resolution ?? 'STATIC',
      ports,
      ...(opts.endpoints ? { endpoints: opts.endpoints } : {}),
      ...(opts.workloadSelector ? { workloadSelector: { labels: opts.workloadSelector } } : {}),
    },
  };
}

export function workloadEntry(name: string, spec: Record<string, unknown>, namespace = 'default'): Record<string, unknown> {
  return { apiVersion: 'networking.istio.io/v1', kind: 'WorkloadEntry', metadata: { name, namespace }, spec };
}

export function destinationRule(name: string, spec: Record<string, unknown>, namespace = 'default'): Record<string, unknown> {
  return { apiVersion: 'networking.istio.io/v1', kind: 'DestinationRule', metadata: { name, namespace }, spec };
}

/** Every built message must pass Envoy's validate rules and survive the wire unchanged. */
export function checked<D extends DescMessage>(schema: D, messages: readonly MessageShape<D>[]): MessageShape<D>[] {
  return messages.map((m) => {
    assertValid(schema, m, registry);
    const back = fromBinary(schema, toBinary(schema, m));
    assert.ok(equals(schema, back, m), `${schema.typeName} changed on the wire`);
    return back;
  });
}

export function byName(clusters: readonly Cluster[]): Map<string, Cluster> {
  return new Map(checked(ClusterSchema, clusters).map((c) => [c.name, c]));
}

export function get<K, V>(m: ReadonlyMap<K, V>, k: K): V {
  const v = m.get(k);
  assert.ok(v !== undefined, `missing ${String(k)} in [${[...m.keys()].join(', ')}]`);
  return v;
}

export function httpOptionsOf(c: Cluster): HttpProtocolOptions | undefined {
  const any = c.typedExtensionProtocolOptions[HTTP_PROTOCOL_OPTIONS];
  return any ? anyUnpack(any, HttpProtocolOptionsSchema) : undefined;
}

export function tlsOf(socket: Cluster['transportSocket']): UpstreamTlsContext {
  assert.equal(socket?.name, 'envoy.transport_sockets.tls');
  assert.equal(socket.configType.case, 'typedConfig');
  const ctx = anyUnpack(socket.configType.value, UpstreamTlsContextSchema);
  assert.ok(ctx);
  return ctx;
}

export const sdsNames = (ctx: UpstreamTlsContext): { certs: string[]; validation: string | undefined } => {
  const v = ctx.commonTlsContext?.validationContextType;
  return {
    certs: ctx.commonTlsContext?.tlsCertificateSdsSecretConfigs.map((s) => s.name) ?? [],
    validation: v?.case === 'combinedValidationContext' ? v.value.validationContextSdsSecretConfig?.name : undefined,
  };
};
