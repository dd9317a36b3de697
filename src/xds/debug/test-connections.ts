import { create } from '@bufbuild/protobuf';
import { NodeSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import { parseProxy } from '../../model/index.js';
import { Connection } from '../connection.js';

/** A Connection for unit tests: a proxyless sidecar `pod.namespace` whose sink drops everything. */
export function testConnection(
  pod: string,
  opts: { namespace?: string; n?: number; connectedAt?: number; configTypes?: readonly string[] } = {},
): Connection {
  const namespace = opts.namespace ?? 'default';
  const parsed = parseProxy(
    create(NodeSchema, {
      id: `sidecar~10.0.0.1~${pod}.${namespace}~${namespace}.svc.cluster.local`,
      metadata: { GENERATOR: 'grpc', NAMESPACE: namespace },
      userAgentName: 'envoy',
      extensions: (opts.configTypes ?? []).map((t, i) => ({ name: `ext-${i}`, category: 'envoy.filters.http', typeUrls: [t] })),
    }),
  );
  if (!parsed.ok) throw new Error('bad test node');
  return new Connection({
    id: `${parsed.value.id}-${opts.n ?? 1}`,
    proxy: parsed.value,
    connectedAt: opts.connectedAt ?? 0,
    peer: 'ipv4:127.0.0.1:1234',
    sink: { write: () => Promise.resolve(), end: () => {} },
  });
}
