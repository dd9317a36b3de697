/**
 * meshctl waypoint without a cluster: `generate` prints the Gateway istioctl prints (the expected
 * YAML is written from istioctl/pkg/waypoint's makeGateway and sigs.k8s.io/yaml's key order), its
 * flag checks, and apply/list/delete on a meshpilot config directory (--configDir), whose files
 * the server's own parser must accept. The cluster side is test/e2e/meshctl-waypoint-kube.test.ts.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { tempDir, type TempDir } from '../../../test/support/temp-dir.js';
import { run } from '../test-io.js';

const lines = (...l: string[]): string => l.map((x) => x + '\n').join('');

describe('meshctl waypoint generate', () => {
  it('-n: the Gateway of class istio-waypoint with the HBONE listener on 15008, no waypoint-for label without --for', async () => {
    const r = await run(['waypoint', 'generate', '-n', 'shop']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      lines(
        'apiVersion: gateway.networking.k8s.io/v1',
        'kind: Gateway',
        'metadata:',
        '  name: waypoint',
        '  namespace: shop',
        'spec:',
        '  gatewayClassName: istio-waypoint',
        '  listeners:',
        '  - name: mesh',
        '    port: 15008',
        '    protocol: HBONE',
      ),
    );
  });

  it('--for, --revision and --name: labels sorted before name; without -n no namespace', async () => {
    const r = await run(['waypoint', 'generate', '--for', 'service', '--name', 'reviews-wp', '-r', 'canary']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      lines(
        'apiVersion: gateway.networking.k8s.io/v1',
        'kind: Gateway',
        'metadata:',
        '  labels:',
        '    istio.io/rev: canary',
        '    istio.io/waypoint-for: service',
        '  name: reviews-wp',
        'spec:',
        '  gatewayClassName: istio-waypoint',
        '  listeners:',
        '  - name: mesh',
        '    port: 15008',
        '    protocol: HBONE',
      ),
    );
    // --name given before the verb, as istioctl's persistent flag.
    const before = await run(['waypoint', '--name', 'early', 'generate']);
    assert.match(before.stdout, /^ {2}name: early$/m);
  });

  it('a bad --for and the reserved name none are refused with istioctl messages', async () => {
    const bad = await run(['waypoint', 'generate', '--for', 'pods']);
    assert.equal(bad.code, 1);
    assert.equal(
      bad.stderr,
      'Error: failed to create gateway: invalid traffic type: pods. Valid options are: [all none service workload]\n',
    );
    const none = await run(['waypoint', 'generate', '--name', 'none']);
    assert.equal(none.stderr, "Error: failed to create gateway: invalid name provided for waypoint, 'none' is a reserved value\n");
  });
});

describe('meshctl waypoint on a config directory (--configDir)', () => {
  let dir: TempDir;
  before(() => {
    dir = tempDir('meshctl-waypoint-dir-');
  });
  after(async () => {
    await dir.remove();
  });

  it('apply writes the Gateway to its own file, which meshpilot reads as a valid Gateway', async () => {
    const r = await run(['waypoint', 'apply', '-n', 'shop', '--for', 'workload', '--configDir', dir.path]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '✅ waypoint shop/waypoint applied\n');
    const text = await readFile(path.join(dir.path, 'waypoint-shop-waypoint.yaml'), 'utf8');
    assert.equal(text, (await run(['waypoint', 'generate', '-n', 'shop', '--for', 'workload'])).stdout);
    // The server's own parser and validator (Gateway API schemas) accept it.
    const valid = await run(['validate', '-f', path.join(dir.path, 'waypoint-shop-waypoint.yaml')]);
    assert.equal(valid.code, 0, valid.stdout + valid.stderr);
  });

  it('list reads every waypoint Gateway of the directory, PROGRAMMED False (files carry no status)', async () => {
    await writeFile(
      path.join(dir.path, 'other.yaml'),
      lines(
        'apiVersion: gateway.networking.k8s.io/v1',
        'kind: Gateway',
        'metadata: {name: ingress, namespace: shop}',
        'spec: {gatewayClassName: istio, listeners: [{name: http, port: 80, protocol: HTTP}]}',
        '---',
        'apiVersion: gateway.networking.k8s.io/v1',
        'kind: Gateway',
        'metadata: {name: east, namespace: shop, labels: {istio.io/rev: canary}}',
        'spec: {gatewayClassName: istio-waypoint, listeners: [{name: mesh, port: 15008, protocol: HBONE}]}',
      ),
    );
    const r = await run(['waypoint', 'list', '-n', 'shop', '--configDir', dir.path]);
    assert.equal(
      r.stdout,
      lines(
        'NAME         REVISION     TRAFFIC TYPE     PROGRAMMED',
        'east         canary       none             False',
        'waypoint     default      workload         False',
      ),
    );
    const empty = await run(['waypoint', 'list', '-n', 'billing', '--configDir', dir.path]);
    assert.equal(empty.stdout, 'No waypoints found.\n');
  });

  it('delete removes a waypoint alone in its file, and refuses one sharing a file', async () => {
    const shared = await run(['waypoint', 'delete', 'east', '-n', 'shop', '--configDir', dir.path]);
    assert.equal(shared.code, 1);
    assert.match(shared.stderr, /Gateway shop\/east shares .*other\.yaml with other objects/);
    const r = await run(['waypoint', 'delete', 'waypoint', 'ingress', '-n', 'shop', '--configDir', dir.path]);
    assert.equal(r.code, 0, r.stderr);
    // ingress is not a waypoint: not found, as istioctl says of a Gateway of another class.
    assert.equal(r.stdout, 'waypoint shop/ingress not found\nwaypoint shop/waypoint deleted\n');
    assert.deepEqual(await readdir(dir.path), ['other.yaml']);
  });

  it('--enroll-namespace and status need a cluster', async () => {
    const enroll = await run(['waypoint', 'apply', '--enroll-namespace', '--configDir', dir.path]);
    assert.equal(enroll.code, 64);
    assert.match(enroll.stderr, /--enroll-namespace needs a cluster/);
    const status = await run(['waypoint', 'status', '--configDir', dir.path]);
    assert.equal(status.code, 64);
    assert.match(status.stderr, /status needs a cluster/);
  });

  it('delete: names or --all, not both, not neither', async () => {
    assert.match((await run(['waypoint', 'delete', '--configDir', dir.path])).stderr, /must specify a waypoint name or delete all/);
    assert.match(
      (await run(['waypoint', 'delete', 'x', '--all', '--configDir', dir.path])).stderr,
      /cannot specify waypoint names when deleting all/,
    );
  });
});
