import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { ClientConfigSchema, ConfigStatus } from '../../gen/envoy/service/status/v3/csds_pb.js';
import { CDS, EDS, formatProxyStatus, formatProxyStatusVerbose, humanDuration, LDS, proxyIdOf, RDS, statusRow } from './status-format.js';
import { tabwrite } from './tabwriter.js';

const NOW = new Date('2026-12-03T08:00:00Z');

function cc(id: string, statuses: [string, ConfigStatus, number?][]): ReturnType<typeof create<typeof ClientConfigSchema>> {
  return create(ClientConfigSchema, {
    node: { id, metadata: { CLUSTER_ID: 'Kubernetes', ISTIO_VERSION: '1.28.0', NAMESPACE: 'bookinfo' } },
    genericXdsConfigs: statuses.map(([typeUrl, configStatus, agoMs]) => ({
      typeUrl,
      configStatus,
      ...(agoMs !== undefined ? { lastUpdated: timestampFromDate(new Date(NOW.getTime() - agoMs)) } : {}),
    })),
  });
}

describe('proxy-status tables', () => {
  it("Go's tabwriter: columns padded to widest + padding, the last cell as is", () => {
    assert.equal(
      tabwrite(
        [
          ['A', 'BB', 'C'],
          ['aaa', '', 'c'],
        ],
        5,
      ),
      'A       BB     C\naaa            c\n',
    );
    assert.equal(
      tabwrite(
        [
          ['x', ''],
          ['yy', 'z'],
        ],
        1,
      ),
      'x  \nyy z\n',
    );
  });

  it("k8s HumanDuration, as istioctl prints a status's age", () => {
    const s = 1000;
    assert.deepEqual(
      [
        0,
        59 * s,
        119 * s,
        120 * s,
        182 * s,
        600 * s,
        179 * 60 * s,
        3 * 3600 * s + 5 * 60 * s,
        8 * 3600 * s,
        50 * 3600 * s,
        400 * 24 * 3600 * s,
        -5 * s,
      ].map(humanDuration),
      ['0s', '59s', '119s', '2m', '3m2s', '10m', '179m', '3h5m', '8h', '2d2h', '400d', '<invalid>'],
    );
  });

  it('SUBSCRIBED TYPES counts the types that are not IGNORED, in CDS LDS EDS RDS order; rows merge across replicas', () => {
    const a = statusRow(
      cc('sidecar~10.1.0.10~productpage-v1-1.bookinfo~bookinfo.svc.cluster.local', [
        [LDS, ConfigStatus.SYNCED],
        [CDS, ConfigStatus.SYNCED],
        [RDS, ConfigStatus.STALE],
        [EDS, ConfigStatus.NOT_SENT],
      ]),
      'istiod-a',
      NOW,
    );
    const b = statusRow(
      cc('sidecar~10.1.0.21~reviews-v1-1.bookinfo~bookinfo.svc.cluster.local', [
        [LDS, ConfigStatus.SYNCED],
        [CDS, ConfigStatus.UNKNOWN],
      ]),
      'istiod-b',
      NOW,
    );
    // NAME is istiod's proxy ID, `<pod>.<namespace>`, not the whole node id.
    assert.equal(
      formatProxyStatus([b, a]),
      [
        'NAME                          CLUSTER        ISTIOD       VERSION     SUBSCRIBED TYPES',
        'productpage-v1-1.bookinfo     Kubernetes     istiod-a     1.28.0      4 (CDS,LDS,EDS,RDS)',
        'reviews-v1-1.bookinfo         Kubernetes     istiod-b     1.28.0      1 (LDS)',
        '',
      ].join('\n'),
    );
  });

  it('NAME is <pod>.<namespace> of a node id, any other id as it is; VERSION falls back to the user agent', () => {
    assert.deepEqual(
      ['sidecar~10.1.0.10~productpage-v1-1.bookinfo~bookinfo.svc.cluster.local', 'reviews-v1-1.bookinfo', 'a~b~~d', 'odd'].map(proxyIdOf),
      ['productpage-v1-1.bookinfo', 'reviews-v1-1.bookinfo', 'a~b~~d', 'odd'],
    );
    const envoy = create(ClientConfigSchema, {
      node: {
        id: 'sidecar~127.0.0.10~demo-client.default~default.svc.cluster.local',
        metadata: { CLUSTER_ID: 'Kubernetes' },
        userAgentName: 'envoy',
        userAgentVersionType: { case: 'userAgentBuildVersion', value: { version: { majorNumber: 1, minorNumber: 40, patch: 0 } } },
      },
    });
    const grpc = create(ClientConfigSchema, {
      node: {
        id: 'sidecar~127.0.0.11~grpc-client.default~default.svc.cluster.local',
        metadata: { CLUSTER_ID: 'Kubernetes' },
        userAgentName: 'grpc-node-js',
        userAgentVersionType: { case: 'userAgentVersion', value: '1.14.7' },
      },
    });
    assert.deepEqual(
      [statusRow(envoy, 'x', NOW), statusRow(grpc, 'x', NOW)].map((r) => [r.proxyID, r.clusterID, r.version]),
      [
        ['demo-client.default', 'Kubernetes', 'envoy/1.40.0'],
        ['grpc-client.default', 'Kubernetes', 'grpc-node-js/1.14.7'],
      ],
    );
    // ISTIO_VERSION, when the proxy sends it, wins (istioctl's column).
    assert.equal(statusRow(cc('sidecar~1.2.3.4~p.ns~ns.svc.cluster.local', []), 'x', NOW).version, '1.28.0');
  });

  it('-v: a column per type (sorted by type URL, ECDS included), SYNCED (age) / STALE / NOT SENT / IGNORED', () => {
    const a = statusRow(
      cc('p1', [
        [CDS, ConfigStatus.SYNCED, 182_000],
        [LDS, ConfigStatus.STALE],
        [EDS, ConfigStatus.NOT_SENT],
        [RDS, ConfigStatus.ERROR, 5_000],
      ]),
      'istiod-a',
      NOW,
    );
    const out = formatProxyStatusVerbose([a]).split('\n');
    assert.deepEqual(out[0]?.split(/ {2,}/), ['NAME', 'CLUSTER', 'CDS', 'ECDS', 'EDS', 'LDS', 'RDS', 'ISTIOD', 'VERSION']);
    assert.deepEqual(out[1]?.split(/ {2,}/), [
      'p1',
      'Kubernetes',
      'SYNCED (3m2s)',
      'IGNORED',
      'NOT SENT',
      'STALE',
      'ERROR (5s)',
      'istiod-a',
      '1.28.0',
    ]);
  });

  it('a proxy with no types shows 0', () => {
    const r = statusRow(cc('p0', []), 'x', NOW);
    assert.match(formatProxyStatus([r]).split('\n')[1] ?? '', / 0$/);
  });
});
