import assert from 'node:assert/strict';
import { test } from 'node:test';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { ListenerSchema } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import {
  HttpConnectionManager_TracingSchema,
  HttpConnectionManagerSchema,
} from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { pushRequest } from '../../model/push-request.js';
import { silentLogger } from '../../util/log.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { proxyOf, pushFor, serviceEntry } from '../../../test/support/networking/cluster-fixtures.js';
import { hcmTelemetry } from '../telemetry/index.js';
import { sidecarListenerGenerator } from './sidecar-generators.js';

const objects = [
  serviceEntry('reviews', 'reviews.default.svc.cluster.local', [{ number: 9080, name: 'http', protocol: 'HTTP' }]),
  serviceEntry('db', 'db.default.svc.cluster.local', [{ number: 5432, name: 'tcp', protocol: 'TCP' }]),
];
const workload = (name: string, revision: string, ip: string) =>
  proxyOf('sidecar', {
    ip,
    labels: { app: name, 'service.istio.io/canonical-name': name, 'service.istio.io/canonical-revision': revision },
  });
const WATCH = { typeUrl: TypeUrl.Listener, names: new Set<string>(), wildcard: true };
const REQ = pushRequest({ full: true, reason: 'config', start: 0 });

test('workloads of one scope share the outbound listeners built once; each gets its own tracing tags, as if built for it alone', () => {
  const push = pushFor(objects);
  const generator = sidecarListenerGenerator(silentLogger);
  const proxies = [workload('productpage', 'v1', '10.0.0.1'), workload('ratings', 'v2', '10.0.0.2')];
  const tagsSeen = new Set<string>();
  for (const proxy of proxies) {
    const expected = toBinary(
      HttpConnectionManager_TracingSchema,
      create(HttpConnectionManager_TracingSchema, hcmTelemetry(push, proxy, 'outbound').tracing),
    );
    let hcms = 0;
    for (const r of generator.generate(proxy, WATCH, push, REQ)) {
      const l = fromBinary(ListenerSchema, r.value);
      assert.deepEqual(toBinary(ListenerSchema, l), r.value, `${r.name}: the canonical encoding of its message`);
      if (l.trafficDirection !== 2) continue; // outbound only: virtualInbound is built per workload
      for (const chain of [...l.filterChains, ...(l.defaultFilterChain ? [l.defaultFilterChain] : [])]) {
        for (const f of chain.filters) {
          if (f.configType.case !== 'typedConfig') continue;
          const hcm = anyUnpack(f.configType.value, HttpConnectionManagerSchema);
          if (!hcm) continue;
          hcms++;
          assert.ok(hcm.tracing, `${r.name}: an HCM without tracing`);
          assert.deepEqual(
            toBinary(HttpConnectionManager_TracingSchema, hcm.tracing),
            expected,
            `${r.name}: the tracing built for ${proxy.labels.app}`,
          );
          const tag = hcm.tracing.customTags.find((t) => t.tag === 'istio.canonical_service')?.type;
          tagsSeen.add(tag?.case === 'literal' ? tag.value.value : '');
        }
      }
    }
    assert.ok(hcms > 0, 'the HTTP port has an outbound HCM');
  }
  assert.deepEqual([...tagsSeen].sort(), ['productpage', 'ratings'], 'each workload names itself');
  const outboundEntries = [...push.cache.entriesForDebug()].filter(([k]) => k.startsWith('LDS|out|'));
  assert.equal(outboundEntries.length, 1, 'one cached outbound list for the scope, not one per workload');
});
