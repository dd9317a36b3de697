import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { builtinInjector, parseInjectorConfig, parseInjectorValues } from './config.js';

const ORIGIN = 'ConfigMap istio-system/istio-sidecar-injector key config';

describe('injector ConfigMap', () => {
  it('reads the chart-rendered config key', () => {
    const text = [
      '# defaultTemplates defines the default template to use for pods that do not explicitly specify a template',
      'defaultTemplates: [sidecar]',
      'policy: enabled',
      'alwaysInjectSelector:',
      '  []',
      'neverInjectSelector:',
      '  - matchExpressions:',
      '    - {key: openshift.io/build.name, operator: Exists}',
      'injectedAnnotations:',
      '  "seccomp.security.alpha.kubernetes.io/pod": "runtime/default"',
      'template: "{{ Template_Version_And_Istio_Version_Mismatched_Check_Installation }}"',
      'templates:',
      '  sidecar: |',
      '    spec:',
      '      containers:',
      '      - name: istio-proxy',
      'aliases:',
      '  both: [sidecar, grpc-agent]',
    ].join('\n');
    const c = parseInjectorConfig(text, ORIGIN);
    assert.equal(c.policy, 'enabled');
    assert.deepEqual(c.defaultTemplates, ['sidecar']);
    assert.deepEqual(c.neverInjectSelector, [
      { matchLabels: {}, matchExpressions: [{ key: 'openshift.io/build.name', operator: 'Exists', values: [] }] },
    ]);
    assert.deepEqual(c.alwaysInjectSelector, []);
    assert.deepEqual(c.injectedAnnotations, { 'seccomp.security.alpha.kubernetes.io/pod': 'runtime/default' });
    assert.equal(c.templates.sidecar, 'spec:\n  containers:\n  - name: istio-proxy\n');
    assert.deepEqual(c.aliases, { both: ['sidecar', 'grpc-agent'] });
    assert.deepEqual(c.ignoredKeys, ['template']);
  });

  it('defaults defaultTemplates to sidecar and names bad fields', () => {
    assert.deepEqual(parseInjectorConfig('policy: disabled', ORIGIN).defaultTemplates, ['sidecar']);
    assert.throws(() => parseInjectorConfig('templates: [a]', ORIGIN), { message: `${ORIGIN}: templates must be a map of strings` });
    assert.throws(() => parseInjectorConfig('templates: {sidecar: 3}', ORIGIN), {
      message: `${ORIGIN}: templates.sidecar must be a string, not 3`,
    });
    assert.throws(() => parseInjectorConfig('neverInjectSelector: [{matchExpressions: [{key: a, operator: Has}]}]', ORIGIN), {
      message: `${ORIGIN}: neverInjectSelector[0].matchExpressions[0].operator "Has" is not In, NotIn, Exists or DoesNotExist`,
    });
    assert.throws(() => parseInjectorConfig('policy: [x', ORIGIN), /ConfigMap istio-system\/istio-sidecar-injector key config: not YAML/);
    assert.throws(() => parseInjectorValues(`global:\n  x: ${'{a: '.repeat(150)}1${'}'.repeat(150)}\n`, 'values'), {
      message: 'values:2: nesting deeper than 100 levels',
    });
    assert.throws(
      () => parseInjectorValues('a: &x [1]\nb: [*x, *x]\n'.replace('[*x, *x]', `[${Array(200).fill('*x').join(', ')}]`), 'values'),
      /values: not YAML: .*alias/i,
    );
    assert.throws(() => parseInjectorValues('[1, 2]', 'values'), {
      message: 'values: values must be an object of Helm values (global, sidecarInjectorWebhook, …)',
    });
  });

  it('builtin: Istio templates and the chart values picked as the chart picks them', () => {
    const { config, values } = builtinInjector();
    assert.equal(config.policy, 'enabled');
    assert.deepEqual(Object.keys(config.templates).sort(), ['gateway', 'grpc-agent', 'grpc-simple', 'kube-gateway', 'sidecar', 'waypoint']);
    assert.match(config.templates.sidecar ?? '', /- name: istio-proxy/);
    assert.deepEqual(Object.keys(values).sort(), ['gateways', 'global', 'pilot', 'revision', 'sidecarInjectorWebhook']);
    const global = values.global as { proxy: { statusPort: number; autoInject: string }; sds: { token: { aud: string } } };
    assert.equal(global.proxy.statusPort, 15020);
    assert.equal(global.sds.token.aud, 'istio-ca');
    assert.deepEqual(values.pilot, { cni: { enabled: false, provider: 'default' }, env: {} });
  });
});
