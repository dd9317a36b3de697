/**
 * The injected ProxyConfig (PROXY_CONFIG, resolved by injection from mesh config, ProxyConfig
 * resources and the pod annotation) applied by the agent as pilot-agent does: proxyMetadata entries
 * become environment (overriding the pod's), so ISTIO_META_* among them become node metadata; the
 * whole config is node metadata PROXY_CONFIG in the Envoy bootstrap the agent writes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { BootstrapSchema } from '../gen/envoy/config/bootstrap/v3/bootstrap_pb.js';
import { xdsJsonRegistry } from '../model/json-registry.js';
import { buildEnvoyBootstrap } from './envoy-bootstrap.js';
import { buildNode } from './node-identity.js';
import { parseAgentOptions } from './options.js';

const PROXY_CONFIG = JSON.stringify({
  discoveryAddress: 'meshpilot.mesh.svc:15012',
  concurrency: 6,
  image: { imageType: 'distroless' },
  proxyMetadata: { ISTIO_META_DNS_CAPTURE: 'true', ISTIO_META_NETWORK: 'from-proxy-config', CA_ADDR: 'ca.example:15012' },
});

describe('agent: the injected ProxyConfig', () => {
  const o = parseAgentOptions([], {
    POD_NAME: 'web-1',
    POD_NAMESPACE: 'shop',
    INSTANCE_IP: '10.1.0.10',
    ISTIO_META_NETWORK: 'from-pod',
    PROXY_CONFIG,
  });

  it('proxyMetadata is environment: node metadata and settings read from env follow it (it wins over the pod env)', () => {
    assert.equal(o.extraMetadata.DNS_CAPTURE, 'true');
    assert.equal(o.extraMetadata.NETWORK, 'from-proxy-config');
    assert.equal(o.caAddr, 'ca.example:15012');
    assert.equal(o.xdsAddr, 'meshpilot.mesh.svc:15012');
  });

  it('the Envoy bootstrap carries it as node metadata PROXY_CONFIG (concurrency, image) and decodes as a Bootstrap', () => {
    const json = buildEnvoyBootstrap({ node: buildNode(o), xdsSocket: '/x', sdsSocket: '/s', xdsApi: 'DELTA_GRPC' });
    const b = fromJson(BootstrapSchema, JSON.parse(JSON.stringify(json)) as JsonValue, { registry: xdsJsonRegistry() });
    const pc = b.node?.metadata?.PROXY_CONFIG as { concurrency?: number; image?: { imageType?: string } } | undefined;
    assert.equal(pc?.concurrency, 6);
    assert.equal(pc?.image?.imageType, 'distroless');
    assert.equal(b.node?.metadata?.DNS_CAPTURE, 'true');
  });

  it('PROXY_CONFIG that is not a JSON object is refused, naming it', () => {
    assert.throws(() => parseAgentOptions([], { PROXY_CONFIG: '[1]' }), /PROXY_CONFIG: not a JSON object/);
  });
});
