/**
 * Tables for what the bookinfo goldens do not hold: a proxyless gRPC client's API listener, route
 * rows that differ only by header or query conditions, and the bootstrap summary of a client that
 * is no Envoy.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { anyPack } from '@bufbuild/protobuf/wkt';
import { BootstrapConfigDumpSchema, ConfigDumpSchema } from '../../gen/envoy/admin/v3/config_dump_pb.js';
import { ClustersConfigDumpSchema } from '../../gen/envoy/admin/v3/config_dump_shared_pb.js';
import { ListenerSchema } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../gen/envoy/config/route/v3/route_pb.js';
import { HttpConnectionManagerSchema } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { formatListeners } from './listener-format.js';
import { renderProxyConfig } from './proxy-config.js';
import { decodeConfigDump } from './proxy-config-data.js';
import { formatRoutes } from './route-format.js';

const HOST = 'reviews.default.svc.cluster.local';

describe('proxyless and header-matched tables', () => {
  it("a proxyless client's API listener is a row: its target host and port, its RDS route", () => {
    const hcm = create(HttpConnectionManagerSchema, {
      routeSpecifier: { case: 'rds', value: { routeConfigName: `outbound|9080||${HOST}` } },
    });
    const l = create(ListenerSchema, { name: `${HOST}:9080`, apiListener: { apiListener: anyPack(HttpConnectionManagerSchema, hcm) } });
    assert.equal(
      formatListeners([l]),
      ['ADDRESSES                         PORT MATCH DESTINATION', `${HOST} 9080 ALL   Route: outbound|9080||${HOST}`, ''].join('\n'),
    );
    assert.equal(formatListeners([l], { verbose: false }), `ADDRESSES                         PORT TYPE\n${HOST} 9080 HTTP\n`);
    assert.equal(formatListeners([l], { port: 9080, type: 'http' }).split('\n').length, 3);
    assert.equal(formatListeners([l], { port: 80 }), 'ADDRESSES PORT MATCH DESTINATION\n');
  });

  it('route MATCH adds header and query conditions, so such routes are no look-alike rows', () => {
    const rc = create(RouteConfigurationSchema, {
      name: '9080',
      virtualHosts: [
        {
          name: `${HOST}:9080`,
          domains: [HOST, 'reviews'],
          routes: [
            {
              match: {
                pathSpecifier: { case: 'prefix', value: '/' },
                headers: [
                  {
                    name: 'end-user',
                    headerMatchSpecifier: { case: 'stringMatch', value: { matchPattern: { case: 'exact', value: 'jason' } } },
                  },
                ],
              },
            },
            {
              match: {
                pathSpecifier: { case: 'prefix', value: '/' },
                headers: [
                  { name: 'x-canary', headerMatchSpecifier: { case: 'presentMatch', value: true } },
                  {
                    name: 'x-env',
                    invertMatch: true,
                    headerMatchSpecifier: { case: 'stringMatch', value: { matchPattern: { case: 'prefix', value: 'prod' } } },
                  },
                ],
              },
            },
            {
              match: {
                pathSpecifier: { case: 'path', value: '/api' },
                queryParameters: [
                  {
                    name: 'v',
                    queryParameterMatchSpecifier: {
                      case: 'stringMatch',
                      value: { matchPattern: { case: 'safeRegex', value: { regex: '[12]' } } },
                    },
                  },
                ],
              },
            },
            { match: { pathSpecifier: { case: 'prefix', value: '/' } } },
          ],
        },
      ],
    });
    const matches = formatRoutes([rc])
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => l.split(/ {2,}/)[3]);
    assert.deepEqual(matches, ['/* [end-user=jason]', '/* [x-canary, !x-env=prod*]', '/api [?v~=[12]]', '/*']);
  });

  it('the bootstrap summary names a client that is no Envoy by its user agent', () => {
    const dump = (node: Record<string, unknown>) =>
      decodeConfigDump(
        create(ConfigDumpSchema, {
          configs: [
            anyPack(BootstrapConfigDumpSchema, create(BootstrapConfigDumpSchema, { bootstrap: { node } })),
            anyPack(ClustersConfigDumpSchema, create(ClustersConfigDumpSchema)),
          ],
        }),
      );
    const grpc = dump({
      id: 'sidecar~1.2.3.4~c.default~default.svc.cluster.local',
      userAgentName: 'gRPC Node Pure JS',
      userAgentVersionType: { case: 'userAgentVersion', value: '1.14.1' },
    });
    const envoy = dump({
      id: 'x',
      userAgentName: 'envoy',
      userAgentVersionType: { case: 'userAgentBuildVersion', value: { version: { majorNumber: 1, minorNumber: 40, patch: 0 } } },
      metadata: { ISTIO_VERSION: '1.28.0' },
    });
    const summary = (d: ReturnType<typeof dump>): string => renderProxyConfig('bootstrap', d, { output: 'short' });
    assert.equal(summary(grpc), 'Client Version: gRPC Node Pure JS/1.14.1\n');
    assert.equal(summary(envoy), 'Istio Version: 1.28.0\nEnvoy Version: 1.40.0\n');
    assert.equal(summary(dump({ id: 'y' })), 'Envoy Version: unknown (the proxy sent no user agent)\n');
  });
});
