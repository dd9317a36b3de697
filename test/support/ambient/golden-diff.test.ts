/**
 * The comparison behind test/e2e/ambient-golden.test.ts, on the committed golden itself: equal to
 * itself; a changed leaf, a missing resource and an extra one are each reported by name and path
 * (IP bytes decoded); the apiserver-port normalisation makes two runs' kubernetes Service equal.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { JsonObject } from '@bufbuild/protobuf';
import { AMBIENT_DIR } from './cluster-state.js';
import { compareWithGolden, formatDiffs, resourcesOf, WAYPOINT_SECTIONS, WDS_SECTIONS } from './golden-diff.js';

const load = (file: string): JsonObject => JSON.parse(readFileSync(join(AMBIENT_DIR, 'istiod', file), 'utf8')) as JsonObject;
const clone = <T>(v: T): T => structuredClone(v);
type Item = { name: string; resource: Record<string, Record<string, unknown>> };

describe('ambient golden comparison', () => {
  it('finds no difference between a golden and itself', () => {
    for (const [file, sections, view] of [
      ['wds.json', WDS_SECTIONS, 'ztunnel'],
      ['waypoint.json', WAYPOINT_SECTIONS, 'waypoint'],
    ] as const) {
      const r = resourcesOf(load(file), sections);
      assert.ok(r.length > 10, `${file} holds resources`);
      const result = compareWithGolden(view, r, resourcesOf(load(file), sections));
      assert.deepEqual(result.unexplained, []);
      assert.equal(result.equalResources, r.length);
    }
  });

  it('reports a changed field, a missing and an extra resource by name, IPs decoded', () => {
    const golden = load('wds.json');
    const changed = clone(golden) as unknown as { addresses: Item[] };
    const reviews = changed.addresses.find((a) => a.name === 'Kubernetes//Pod/apps/reviews-v1-6c9f8b7d4-x2k9p');
    assert.ok(reviews?.resource.workload);
    reviews.resource.workload.addresses = ['CvQBCw=='];
    const dropped = changed.addresses.findIndex((a) => a.name === 'legacy/web.legacy.svc.cluster.local');
    changed.addresses.splice(dropped, 1);
    changed.addresses.push({ name: 'apps/extra.apps.svc.cluster.local', resource: { service: { name: 'extra' } } });
    const istiod = resourcesOf(golden, WDS_SECTIONS);
    const actual = resourcesOf(changed as unknown as JsonObject, WDS_SECTIONS);
    const result = compareWithGolden('ztunnel', istiod, actual);
    const text = formatDiffs(result, istiod, actual, 'meshpilot');
    assert.equal(result.unexplained.length, 3, text);
    assert.match(text, /address Kubernetes\/\/Pod\/apps\/reviews-v1-6c9f8b7d4-x2k9p: 1 field differ/);
    assert.match(text, /workload\.addresses\[0\]: istiod "CvQBCg==" \(10\.244\.1\.10\) \| meshpilot "CvQBCw==" \(10\.244\.1\.11\)/);
    assert.match(text, /address legacy\/web\.legacy\.svc\.cluster\.local: only in istiod/);
    assert.match(text, /address apps\/extra\.apps\.svc\.cluster\.local: only in meshpilot/);
  });

  it('normalises the kubernetes Service targetPort (the test apiserver port) and nothing else of it', () => {
    const golden = load('wds.json');
    const other = clone(golden) as unknown as { addresses: Item[] };
    const kube = other.addresses.find((a) => a.name === 'default/kubernetes.default.svc.cluster.local');
    assert.ok(kube?.resource.service);
    const ports = kube.resource.service.ports as { targetPort?: unknown; servicePort?: unknown }[];
    ports[0]!.targetPort = 1;
    assert.deepEqual(
      compareWithGolden('ztunnel', resourcesOf(golden, WDS_SECTIONS), resourcesOf(other as unknown as JsonObject, WDS_SECTIONS))
        .unexplained,
      [],
    );
    ports[0]!.servicePort = 8443;
    const diffs = compareWithGolden(
      'ztunnel',
      resourcesOf(golden, WDS_SECTIONS),
      resourcesOf(other as unknown as JsonObject, WDS_SECTIONS),
    ).unexplained;
    assert.deepEqual(
      diffs.map((d) => d.path),
      ['service.ports[0].servicePort'],
    );
  });
});
