/**
 * The inventory kinds cover every kind the charts can render: a kind missing from the list would be
 * left behind by upgrade's prune and by uninstall once no longer rendered. Read from the chart
 * templates (and the CRD file the base chart includes), so a new template kind fails here.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { REPO_ROOT } from '../../test/support/paths.js';
import { componentOf, INVENTORY_KINDS, inventorySelector } from './inventory.js';

const CHARTS = path.join(REPO_ROOT, 'manifests', 'charts');

test('every kind a chart template can render is an inventory kind', () => {
  const listed = new Set(INVENTORY_KINDS.map((k) => k.kind));
  const found = new Map<string, string>();
  for (const chart of readdirSync(CHARTS)) {
    for (const sub of ['templates', 'files']) {
      let files: string[];
      try {
        files = readdirSync(path.join(CHARTS, chart, sub)).filter((f) => f.endsWith('.yaml'));
      } catch {
        continue;
      }
      for (const f of files) {
        for (const m of readFileSync(path.join(CHARTS, chart, sub, f), 'utf8').matchAll(/^kind:\s*(.+)$/gm))
          found.set((m[1] ?? '').trim(), `${chart}/${sub}/${f}`);
      }
    }
  }
  assert.ok(found.has('CustomResourceDefinition') && found.has('Deployment'), 'the scan sees the charts');
  for (const [kind, where] of found) {
    // The gateway chart's `kind: {{ .Values.kind | default "Deployment" }}`: Deployment or DaemonSet.
    if (kind.startsWith('{{')) {
      assert.match(kind, /\.Values\.kind \| default "Deployment"/, where);
      assert.ok(listed.has('Deployment') && listed.has('DaemonSet'), where);
      continue;
    }
    assert.ok(listed.has(kind), `${kind} (${where}) is not in INVENTORY_KINDS`);
  }
});

test('selectors and components', () => {
  assert.equal(inventorySelector({ revision: undefined }), 'install.meshpilot.io/managed-by=meshctl,istio.io/rev=default');
  assert.equal(inventorySelector({ revision: 'canary' }), 'install.meshpilot.io/managed-by=meshctl,istio.io/rev=canary');
  assert.equal(inventorySelector({ allRevisions: true }), 'install.meshpilot.io/managed-by=meshctl');
  const obj = (chart: string, name: string, release?: string) => ({
    chart,
    template: '',
    ...(release ? { release } : {}),
    object: { apiVersion: 'v1', kind: 'Service', metadata: { name } },
  });
  assert.deepEqual(componentOf(obj('gateway', 'x', 'istio-egressgateway')), { label: 'EgressGateways', title: 'Egress gateways' });
  assert.deepEqual(componentOf(obj('gateway', 'istio-ingressgateway')), { label: 'IngressGateways', title: 'Ingress gateways' });
  assert.deepEqual(componentOf(obj('meshpilot', 'istiod')), { label: 'Pilot', title: 'Istiod' });
  assert.deepEqual(componentOf(obj('base', 'x')), { label: 'Base', title: 'Istio core' });
});
