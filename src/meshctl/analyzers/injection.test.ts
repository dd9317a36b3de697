import assert from 'node:assert/strict';
import { test } from 'node:test';
import { injectionAnalyzer } from './injection.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('injection', n);

test('IST0102 for a namespace without injection labels (at metadata.name), IST0123 for two kinds of labels, IST0103 for a pod of an injected namespace without a proxy', async () => {
  assert.deepEqual(await analyzeLines(injectionAnalyzer, [f('namespaces.yaml'), f('pods.yaml')]), [
    'Warning [IST0103] (Pod shop/web testdata/meshctl/analyze/injection/pods.yaml:4) The pod shop/web is missing the Istio proxy. This can often be resolved by restarting or redeploying the workload.',
    'Warning [IST0123] (Namespace canary testdata/meshctl/analyze/injection/namespaces.yaml:13) The namespace has more than one type of injection labels [istio-injection=enabled istio.io/rev=canary], which may lead to undefined behavior. Make sure only one injection label exists.',
    "Info [IST0102] (Namespace plain testdata/meshctl/analyze/injection/namespaces.yaml:4) The namespace is not enabled for Istio injection. Run 'kubectl label namespace plain istio-injection=enabled' to enable it, or 'kubectl label namespace plain istio-injection=disabled' to explicitly mark it as not needing injection.",
  ]);
});

test('with -n, a Namespace message belongs to the namespace it names', async () => {
  const lines = await analyzeLines(injectionAnalyzer, [f('namespaces.yaml'), f('pods.yaml')], 'plain');
  assert.equal(lines.length, 1);
  assert.match(lines[0] ?? '', /^Info \[IST0102\] \(Namespace plain /);
  assert.deepEqual(await analyzeLines(injectionAnalyzer, [f('namespaces.yaml'), f('pods.yaml')], 'legacy'), []);
});

test('IST0148 instead of IST0102 when the injector enables namespaces by default', async () => {
  const lines = await analyzeLines(injectionAnalyzer, [f('injector-enabled-by-default.yaml'), f('namespaces.yaml')], 'plain');
  assert.deepEqual(lines, [
    'Info [IST0148] (Namespace plain testdata/meshctl/analyze/injection/namespaces.yaml:1) is enabled for Istio injection, as Istio is installed with enableNamespacesByDefault as true.',
  ]);
});
