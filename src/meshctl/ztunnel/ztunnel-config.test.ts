/**
 * meshctl ztunnel-config over a real ztunnel's config_dump (testdata/meshctl/ztunnel-config/
 * config_dump.json, captured by scripts/capture-ztunnel-config-dump.ts) and small hand-made
 * dumps for what that one lacks (waypoints, legacy certificate chains, map-shaped sections,
 * connections). The expected tables follow istioctl's writer (istioctl/pkg/writer/ztunnel/
 * configdump): Go tabwriter with padding 1 (certificates: 5), its sort orders and its fallbacks.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { run, REPO_ROOT } from '../test-io.js';
import { parseZtunnelDump } from './dump.js';
import { certificateSummary, connectionsSummary, serviceSummary, workloadSummary } from './tables.js';

const CAPTURED = 'testdata/meshctl/ztunnel-config/config_dump.json';
const captured = (): ReturnType<typeof parseZtunnelDump> =>
  parseZtunnelDump(readFileSync(path.join(REPO_ROOT, CAPTURED), 'utf8'), CAPTURED);

const lines = (...l: string[]): string => l.map((x) => x + '\n').join('');

describe('meshctl ztunnel-config over a captured ztunnel config_dump', () => {
  it('workloads: NAMESPACE POD NAME ADDRESS NODE WAYPOINT PROTOCOL, sorted by namespace.name', async () => {
    const r = await run(['ztunnel-config', 'workloads', '-f', CAPTURED]);
    assert.equal(r.code, 0, r.stderr);
    // The WorkloadEntries have no node: the empty cell keeps its column's width.
    assert.equal(
      r.stdout,
      lines(
        'NAMESPACE POD NAME ADDRESS    NODE WAYPOINT PROTOCOL',
        'shop      db-1     10.44.0.31      None     HBONE',
        'shop      vm-1     10.44.0.21      None     HBONE',
        'shop      vm-2     10.44.0.22      None     HBONE',
      ),
    );
  });

  it('workload filters: --address, --workload-namespace (case-insensitive), and the zc/w aliases', async () => {
    const r = await run(['zc', 'w', '-f', CAPTURED, '--address', '10.44.0.22']);
    assert.equal(r.stdout.trimEnd().split('\n').slice(1).join('\n'), 'shop      vm-2     10.44.0.22      None     HBONE');
    const none = await run(['zc', 'workload', '-f', CAPTURED, '--workload-namespace', 'SHOP', '--workload-node', 'other']);
    assert.equal(none.stdout, 'NAMESPACE POD NAME ADDRESS NODE WAYPOINT PROTOCOL\n');
  });

  it('services, policies, certificates', async () => {
    const svc = await run(['zc', 'services', '-f', CAPTURED]);
    assert.equal(
      svc.stdout,
      lines('NAMESPACE SERVICE NAME SERVICE VIP WAYPOINT ENDPOINTS', 'shop      vms          240.0.0.10  None     2/2'),
    );
    const pol = await run(['zc', 'policies', '-f', CAPTURED]);
    assert.equal(pol.stdout, lines('NAMESPACE POLICY NAME ACTION SCOPE', 'shop      allow-vms   Allow  WorkloadSelector'));
    const d = captured();
    const leaf = d.certificates![0]!.certChain[0]!;
    const root = d.certificates![0]!.rootCerts[0]!;
    const hex = (serial: string): string => BigInt(serial).toString(16);
    const inside = Math.max(Date.parse(leaf.validFrom), Date.parse(root.validFrom)) + 60_000;
    const table = certificateSummary(d, inside).split('\n');
    assert.match(table[0]!, /^CERTIFICATE NAME {28}TYPE {5}STATUS {8}VALID CERT {5}SERIAL NUMBER {5,}NOT AFTER {5,}NOT BEFORE$/);
    const cells = (l: string): string[] => l.split(/ {5,}/);
    assert.deepEqual(cells(table[1]!), [
      'spiffe://cluster.local/ns/shop/sa/vm-sa',
      'Leaf',
      'Available',
      'true',
      hex(leaf.serialNumber),
      leaf.expirationTime,
      leaf.validFrom,
    ]);
    assert.deepEqual(cells(table[2]!), [
      'spiffe://cluster.local/ns/shop/sa/vm-sa',
      'Root',
      'Available',
      'true',
      hex(root.serialNumber),
      root.expirationTime,
      root.validFrom,
    ]);
    // After the leaf expired: VALID CERT false for it, the root still valid.
    const later = certificateSummary(d, Date.parse(leaf.expirationTime) + 1000).split('\n');
    assert.equal(cells(later[1]!)[3], 'false');
    assert.equal(cells(later[2]!)[3], 'true');
  });

  it('-o json: the fields of istioctl structs, in their order (missing strings "", omitempty left out)', async () => {
    const r = await run(['zc', 'workloads', '-f', CAPTURED, '-o', 'json', '--address', '10.44.0.31']);
    assert.equal(r.code, 0, r.stderr);
    const [w] = JSON.parse(r.stdout) as Record<string, unknown>[];
    assert.deepEqual(Object.keys(w!), [
      'uid',
      'workloadIps',
      'protocol',
      'name',
      'namespace',
      'serviceAccount',
      'workloadName',
      'workloadType',
      'canonicalName',
      'canonicalRevision',
      'clusterId',
      'trustDomain',
      'locality',
      'node',
      'status',
      'hostname',
      'capacity',
      'applicationTunnel',
      'authorizationPolicies',
    ]);
    assert.deepEqual(w!.applicationTunnel, { protocol: '' });
    assert.ok(
      r.stdout.startsWith('[\n    {\n        "uid": "Kubernetes/networking.istio.io/WorkloadEntry/shop/db-1",\n'),
      'indented by 4 as MarshalIndent',
    );
    // ztunnel's networkMode and services are not istioctl fields: dropped.
    assert.ok(!r.stdout.includes('networkMode'));
  });

  it('-o yaml: keys sorted, sequences not indented (sigs.k8s.io/yaml)', async () => {
    const r = await run(['zc', 'policies', '-f', CAPTURED, '-o', 'yaml']);
    assert.equal(
      r.stdout,
      lines(
        '- action: Allow',
        '  name: allow-vms',
        '  namespace: shop',
        '  rules:',
        '  - - - principals:',
        '        - Exact: cluster.local/ns/shop/sa/vm-sa',
        '  scope: WorkloadSelector',
        '',
      ),
    );
  });

  it('all -o json prints the dump as it came; all prints every table after a blank line', async () => {
    const r = await run(['zc', 'all', '-f', CAPTURED, '-o', 'json']);
    assert.equal(r.stdout, readFileSync(path.join(REPO_ROOT, CAPTURED), 'utf8') + '\n');
    const s = await run(['zc', 'all', '-f', CAPTURED, '--with-headers']);
    assert.deepEqual(
      s.stdout.split('\n').filter((l) => l.startsWith('------')),
      [
        '------ WORKLOAD INFO ------',
        '------ SERVICE INFO ------',
        '------ POLICY INFO ------',
        '------ SECRET INFO ------',
        '------ CONNECTIONS INFO ------',
      ],
    );
    assert.ok(s.stdout.startsWith('\n------ WORKLOAD INFO ------\n\nNAMESPACE POD NAME'));
    assert.ok(s.stdout.endsWith('\nWORKLOAD DIRECTION LOCAL REMOTE REMOTE TARGET PROTOCOL\n'));
  });
});

describe('ztunnel-config tables: what the captured dump does not show', () => {
  const dump = parseZtunnelDump(
    JSON.stringify({
      // Map-shaped sections, as older ztunnels wrote them.
      services: {
        '/10.96.0.5': {
          name: 'waypoint',
          namespace: 'app',
          hostname: 'waypoint.app.svc.cluster.local',
          vips: ['/10.96.0.5'],
          endpoints: {},
        },
        '/10.96.0.9': {
          name: 'web',
          namespace: 'app',
          hostname: 'web.app.svc.cluster.local',
          vips: ['/10.96.0.9', 'net2/10.97.0.9'],
          waypoint: { destination: 'app/waypoint.app.svc.cluster.local' },
          endpoints: { a: { workloadUid: 'uid-a' }, b: { workloadUid: 'uid-b' }, c: { workloadUid: 'uid-gone' } },
        },
      },
      workloads: {
        'uid-b': {
          uid: 'uid-b',
          name: 'web-b',
          namespace: 'app',
          workloadIps: ['10.0.0.2'],
          node: 'n2',
          status: 'Unhealthy',
          protocol: 'HBONE',
          waypoint: { destination: '/10.96.0.5' },
        },
        'uid-a': {
          uid: 'uid-a',
          name: 'web-a',
          namespace: 'app',
          workloadIps: ['10.0.0.1'],
          node: 'n1',
          status: 'Healthy',
          protocol: 'HBONE',
          waypoint: { destination: 'app/gone' },
        },
        'uid-h': { uid: 'uid-h', name: 'ext', namespace: 'app', hostname: 'ext.example.com', protocol: 'TCP' },
      },
      certificates: [
        {
          identity: 'spiffe://td/ns/app/sa/old',
          state: 'Available',
          certChain: [
            { serialNumber: '255', validFrom: '2020-01-01T00:00:00Z', expirationTime: '2020-01-02T00:00:00Z' },
            { serialNumber: '16', validFrom: '', expirationTime: '' },
            { serialNumber: 'x' },
          ],
        },
        { identity: 'spiffe://td/ns/app/sa/new', state: 'Unavailable: signing failed', certChain: [] },
      ],
      workloadState: {
        'uid-a': {
          info: { name: 'web-a', namespace: 'app' },
          connections: {
            inbound: [{ src: '10.0.0.2:4000', originalDst: '10.0.0.1:80', actualDst: '10.0.0.1:15008', protocol: 'HBONE' }],
            outbound: [{ src: '10.0.0.1:5000', originalDst: '10.96.0.9:80', actualDst: '10.0.0.2:15008', protocol: 'HBONE' }],
          },
        },
      },
    }),
    'inline',
  );

  it('WAYPOINT: the service a destination names by namespace/hostname or VIP, NA when none matches; ADDRESS falls back to the hostname', () => {
    assert.equal(
      workloadSummary(dump),
      lines(
        'NAMESPACE POD NAME ADDRESS         NODE WAYPOINT PROTOCOL',
        'app       ext      ext.example.com      None     TCP',
        'app       web-a    10.0.0.1        n1   NA       HBONE',
        'app       web-b    10.0.0.2        n2   waypoint HBONE',
      ),
    );
  });

  it('SERVICE VIP without the network; ENDPOINTS healthy/all', () => {
    assert.equal(
      serviceSummary(dump),
      lines(
        'NAMESPACE SERVICE NAME SERVICE VIP         WAYPOINT ENDPOINTS',
        'app       waypoint     10.96.0.5           None     0/0',
        'app       web          10.96.0.9,10.97.0.9 waypoint 1/3',
      ),
    );
  });

  it('certificates: a chain without rootCerts ends with its Root; no chain: NA and false; Unavailable: … shortened', () => {
    const cells = certificateSummary(dump, Date.parse('2020-01-01T12:00:00Z'))
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => l.split(/ {5,}/));
    assert.deepEqual(cells, [
      ['spiffe://td/ns/app/sa/old', 'Leaf', 'Available', 'true', 'ff', '2020-01-02T00:00:00Z', '2020-01-01T00:00:00Z'],
      ['spiffe://td/ns/app/sa/old', 'Intermediate', 'Available', 'false', '10', 'NA', 'NA'],
      ['spiffe://td/ns/app/sa/old', 'Root', 'Available', 'false', '<nil>', 'NA', 'NA'],
      ['spiffe://td/ns/app/sa/new', 'NA', 'Unavailable', 'false', 'NA', 'NA', 'NA'],
    ]);
  });

  it('connections: addresses named by service hostname or workload name.namespace (--raw keeps them), filtered by direction', () => {
    assert.equal(
      connectionsSummary(dump),
      lines(
        'WORKLOAD  DIRECTION LOCAL           REMOTE          REMOTE TARGET                PROTOCOL',
        'web-a.app Inbound   web-a.app:15008 web-b.app:4000  10.0.0.1:80                  HBONE',
        'web-a.app Outbound  web-a.app:5000  web-b.app:15008 web.app.svc.cluster.local:80 HBONE',
      ),
    );
    assert.equal(
      connectionsSummary(dump, { raw: true, direction: 'inbound', workload: 'web-a.app' }).split('\n')[1],
      'web-a.app Inbound   10.0.0.1:15008 10.0.0.2:4000 10.0.0.1:80   HBONE',
    );
  });
});

describe('ztunnel-config errors', () => {
  it('a dump that is not JSON, and a field of the wrong type, are named', async () => {
    const bad = await run(['zc', 'workloads', '-f', '-'], '{"workloads": [');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^Error: error unmarshalling config dump response from ztunnel \(-\): /);
    const typed = await run(['zc', 'workloads', '-f', '-'], '{"workloads": [{"name": 7}]}');
    assert.match(typed.stderr, /workloads\[0\]\.name: want a string, got 7/);
  });

  it('two sources at once is a usage error; a missing file is named', async () => {
    const r = await run(['zc', 'workloads', '-f', CAPTURED, '--ztunnel-admin', '127.0.0.1:15000']);
    assert.equal(r.code, 64);
    assert.match(r.stderr, /at most one of --file, --node, --ztunnel-admin, or pod name must be passed/);
    const missing = await run(['zc', 'services', '-f', 'no/such/dump.json']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /cannot read the config dump no\/such\/dump\.json/);
  });

  it('an admin address that answers nothing is named', async () => {
    const r = await run(['zc', 'workloads', '--ztunnel-admin', '127.0.0.1:1']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot reach the ztunnel admin at 127\.0\.0\.1:1/);
  });
});
