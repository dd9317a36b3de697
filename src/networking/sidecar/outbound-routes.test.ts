import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { RouteConfigurationSchema } from '../../gen/envoy/config/route/v3/route_pb.js';
import { proxyOf, pushFor, serviceEntry } from '../../../test/support/networking/cluster-fixtures.js';
import { encodeOutboundRouteConfig } from './outbound-routes.js';

const http = [{ number: 8080, name: 'http', protocol: 'HTTP' }];
const withVip = (se: Record<string, unknown>, vip: string): Record<string, unknown> => ({
  ...se,
  spec: { ...(se.spec as object), addresses: [vip] },
});
const objects = [
  // ratings and reviews share a VIP: the later virtual host (registry order) loses that domain and is encoded again without it.
  withVip(serviceEntry('reviews', 'reviews.default.svc.cluster.local', http), '10.1.0.1'),
  withVip(serviceEntry('ratings', 'ratings.default.svc.cluster.local', http), '10.1.0.1'),
  serviceEntry('details', 'details.other.svc.cluster.local', http, { namespace: 'other' }),
];

test('the spliced RouteConfiguration is the canonical encoding of the message (decode and encode give the same bytes)', () => {
  const push = pushFor(objects);
  const proxy = proxyOf('sidecar', { ip: '10.0.0.9' });
  const bytes = encodeOutboundRouteConfig({ push, proxy, scope: push.sidecarScope(proxy) }, '8080');
  assert.ok(bytes);
  const rc = fromBinary(RouteConfigurationSchema, bytes);
  assert.deepEqual(toBinary(RouteConfigurationSchema, rc), bytes);
  assert.equal(rc.name, '8080');
  assert.equal(rc.ignorePortInHostMatching, true);
  assert.equal(rc.validateClusters, false);
  assert.deepEqual(
    rc.virtualHosts.map((vh) => vh.name),
    [
      'ratings.default.svc.cluster.local:8080',
      'reviews.default.svc.cluster.local:8080',
      'details.other.svc.cluster.local:8080',
      'allow_any',
    ],
  );
  const vip = rc.virtualHosts.filter((vh) => vh.domains.includes('10.1.0.1')).map((vh) => vh.name);
  assert.deepEqual(vip, ['ratings.default.svc.cluster.local:8080'], 'a clashing VIP stays with the first virtual host only');
  assert.equal(encodeOutboundRouteConfig({ push, proxy, scope: push.sidecarScope(proxy) }, '9999'), undefined);
  assert.equal(encodeOutboundRouteConfig({ push, proxy, scope: push.sidecarScope(proxy) }, '08080'), undefined);
});
