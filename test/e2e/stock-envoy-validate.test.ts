/**
 * Upstream Envoy loads what meshpilot sends it: the whole bookinfo config (listeners and clusters,
 * RDS/EDS over ADS) of a sidecar and of the ingress gateway, generated for a node carrying stock
 * Envoy 1.40's extension list, passes `envoy --mode validate`. The same sidecar generated as
 * istio-proxy (no extension list) does not — stock Envoy cannot load Istio's filters — which shows
 * the check bites. Validate mode binds no port and connects nowhere.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { nodeFor } from '../../scripts/istiod-capture.js';
import { NodeSchema } from '../../src/gen/envoy/config/core/v3/base_pb.js';
import { parseProxy } from '../../src/model/proxy.js';
import { registerEnvoyGenerators } from '../../src/networking/envoy-generators.js';
import { configCredentials } from '../../src/networking/gateway/config-credentials.js';
import { silentLogger } from '../../src/util/log.js';
import { GeneratorRegistry } from '../../src/xds/generator.js';
import { BOOKINFO_DIR, BOOKINFO_PROXIES } from '../scenarios/bookinfo-fixture.js';
import { generatedToJson } from '../scenarios/istiod-compare.js';
import { ENVOY_BINARY, envoySkipReason } from '../support/envoy.js';
import { generateFor, loadScenario } from '../support/scenario.js';
import { stockEnvoyNodeFields } from '../support/stock-envoy.js';
import { tempDir } from '../support/temp-dir.js';

const skip = envoySkipReason();

/** A static gRPC cluster the config names (ADS, the node agent's SDS); validate mode never dials it. */
const grpcCluster = (name: string): Record<string, unknown> => ({
  name,
  type: 'STATIC',
  typedExtensionProtocolOptions: {
    'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
      '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
      explicitHttpConfig: { http2ProtocolOptions: {} },
    },
  },
  loadAssignment: { clusterName: name, endpoints: [{ lbEndpoints: [{ endpoint: { address: { socketAddress: { address: '127.0.0.1', portValue: 1 } } } }] }] },
});

/** `envoy --mode validate` on a bootstrap holding one proxy's generated listeners and clusters. */
async function validate(proxyName: string, stock: boolean): Promise<{ ok: boolean; output: string }> {
  const { push } = await loadScenario(join(BOOKINFO_DIR, 'config'));
  const generators = registerEnvoyGenerators(new GeneratorRegistry(), { logger: silentLogger, credentials: (p) => configCredentials(p.config, silentLogger) });
  const node = nodeFor(BOOKINFO_PROXIES[proxyName]!);
  if (stock) {
    const envoy = create(NodeSchema, stockEnvoyNodeFields());
    node.userAgentVersionType = envoy.userAgentVersionType;
    node.extensions = envoy.extensions;
  }
  const proxy = parseProxy(node);
  if (!proxy.ok) throw proxy.errors[0];
  const config = generatedToJson(generateFor(push, generators, proxy.value));
  const dir = tempDir('stock-envoy-validate-');
  try {
    const file = join(dir.path, 'bootstrap.json');
    writeFileSync(file, JSON.stringify({
      node: { id: node.id, cluster: node.cluster },
      staticResources: { listeners: config.listeners, clusters: [...config.clusters, grpcCluster('xds-grpc'), grpcCluster('sds-grpc')] },
      dynamicResources: { adsConfig: { apiType: 'GRPC', transportApiVersion: 'V3', grpcServices: [{ envoyGrpc: { clusterName: 'xds-grpc' } }] } },
    }));
    const r = spawnSync(ENVOY_BINARY, ['--mode', 'validate', '-c', file, '--disable-hot-restart', '-l', 'error'], { encoding: 'utf8', timeout: 60_000 });
    const output = `${r.stdout}${r.stderr}`;
    return { ok: r.status === 0, output: output.length > 2000 ? `${output.slice(0, 2000)}…` : output };
  } finally {
    await dir.remove();
  }
}

describe('upstream Envoy validates the config meshpilot generates for it', { skip }, () => {
  for (const proxy of ['productpage', 'ingress-gateway']) {
    test(`${proxy} as stock Envoy 1.40: accepted`, async () => {
      const r = await validate(proxy, true);
      assert.ok(r.ok, `envoy --mode validate rejected ${proxy}'s config:\n${r.output}`);
    });
  }

  test('productpage as istio-proxy: stock Envoy cannot load it (an Istio extension)', async () => {
    const r = await validate('productpage', false);
    assert.ok(!r.ok, 'stock Envoy accepted the istio-proxy config: the check above would prove nothing');
    assert.match(r.output, /istio\.|udpa\.type\.v1\.TypedStruct/);
  });
});
