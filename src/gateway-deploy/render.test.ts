/**
 * istiod as the oracle: Istio's own deployment-controller goldens
 * (pilot/pkg/config/kube/gatewaycommon/testdata/deployment, vendored in testdata/gateway-deploy/istio
 * with SOURCE.md) are what istiod server-side applies for each Gateway of its TestConfigureIstioGateway
 * cases that use the `kube-gateway` template. The same Gateway, values and flags must give the same
 * documents here, byte for byte (istiod's test prints each applied object as sigs.k8s.io/yaml does).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { ProxyImageSchema } from '../gen/networking/v1beta1/proxy_config_pb.js';
import { parseInjectorValues } from '../inject/config.js';
import { injectorSnapshot } from '../inject/injector-source.js';
import { defaultMeshConfig, defaultProxyConfig } from '../inject/mesh.js';
import { marshalYaml } from '../template/index.js';
import { gatewayDeployOptions, type GatewayDeployOptions } from './options.js';
import { controllerOf, controllerVersionDecision, controllerVersionPatch, renderGateway } from './render.js';
import { rec } from './json.js';

const DIR = path.resolve(import.meta.dirname, '../../testdata/gateway-deploy/istio');

interface Case {
  readonly name: string;
  readonly gateway: Record<string, unknown>;
  readonly values?: string;
  readonly overlay?: Record<string, string>;
  readonly env?: Record<string, string>;
  readonly distroless?: boolean;
  /** istiod logs the error and applies nothing but the version annotation. */
  readonly error?: RegExp;
}

function gw(name: string, meta: Record<string, unknown>, spec: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace: 'default', ...meta },
    spec: { gatewayClassName: 'istio', ...spec },
  };
}

const http80 = { listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] };
const https443 = { listeners: [{ name: 'https', port: 443, protocol: 'HTTPS' }] };
const nameOverride = { 'gateway.istio.io/name-override': 'default' };
const seeBoth = { labels: { should: 'see' }, annotations: { should: 'see' } };
const notSee = { labels: { 'should-not': 'see' }, annotations: { 'should-not': 'see' } };
const nullCpu =
  'global:\n  proxy:\n    resources:\n      limits:\n        cpu: null\n        memory: 500Mi\n      requests:\n        cpu: null\n        memory: 150Mi';
const paramsRef = { infrastructure: { labels: { foo: 'bar' }, parametersRef: { group: '', kind: 'ConfigMap', name: 'gw-options' } } };

const waypointGw = (labels: Record<string, string> = {}): Record<string, unknown> => ({
  ...gw('namespace', { labels }),
  spec: { gatewayClassName: 'istio-waypoint', listeners: [{ name: 'mesh', port: 15008, protocol: 'ALL' }] },
});

const CASES: readonly Case[] = [
  {
    name: 'waypoint',
    gateway: waypointGw({ 'topology.istio.io/network': 'network-1' }),
    values: 'global:\n  hub: test\n  tag: test\n  network: network-2',
  },
  {
    name: 'waypoint-resources-null',
    gateway: waypointGw(),
    values:
      'global:\n  waypoint:\n    resources:\n      limits:\n        cpu: null\n        memory: 500Mi\n      requests:\n        cpu: null\n        memory: 150Mi',
  },
  { name: 'waypoint-no-network-label', gateway: waypointGw(), values: 'global:\n  hub: test\n  tag: test\n  network: network-1' },
  { name: 'simple', gateway: gw('default', seeBoth) },
  { name: 'manual-sa', gateway: gw('default', { annotations: { 'gateway.istio.io/service-account': 'custom-sa' } }) },
  { name: 'manual-ip', gateway: gw('default', { annotations: nameOverride }, { addresses: [{ type: 'IPAddress', value: '1.2.3.4' }] }) },
  {
    name: 'cluster-ip',
    gateway: gw('default', { annotations: { 'networking.istio.io/service-type': 'ClusterIP', ...nameOverride } }, http80),
  },
  {
    name: 'multinetwork',
    gateway: gw('default', { labels: { 'topology.istio.io/network': 'network-1' }, annotations: nameOverride }, http80),
  },
  { name: 'quic-disabled', gateway: gw('default', {}, https443) },
  { name: 'quic-enabled', gateway: gw('default', {}, https443), env: { PILOT_ENABLE_QUIC_LISTENERS: 'true' } },
  { name: 'proxy-config-crd', gateway: gw('default', {}), distroless: true },
  { name: 'custom-class', gateway: { ...gw('default', {}), spec: { gatewayClassName: 'custom' } } },
  {
    name: 'infrastructure-labels-annotations',
    gateway: gw('default', notSee, {
      infrastructure: {
        labels: { foo: 'bar', 'gateway.networking.k8s.io/ignore': 'true' },
        annotations: { fizz: 'buzz', 'gateway.networking.k8s.io/ignore': 'true' },
      },
    }),
  },
  { name: 'kube-gateway-ambient-redirect', gateway: gw('default', { labels: { 'istio.io/dataplane-mode': 'ambient' } }) },
  {
    name: 'kube-gateway-ambient-redirect-infra',
    gateway: gw('default', {}, { infrastructure: { labels: { 'istio.io/dataplane-mode': 'ambient' } } }),
  },
  { name: 'kube-gateway-resources-null', gateway: gw('default', {}), values: nullCpu },
  {
    name: 'customizations',
    gateway: gw('namespace', {}, paramsRef),
    overlay: {
      podDisruptionBudget: '\nspec:\n  minAvailable: 1',
      horizontalPodAutoscaler: '\nspec:\n  minReplicas: 2\n  maxReplicas: 2',
      deployment:
        '\nmetadata:\n  annotations:\n    cm-annotation: cm-annotation-value\nspec:\n  replicas: 4\n  template:\n    spec:\n      containers:\n      - name: istio-proxy\n        resources:\n          requests:\n            cpu: 222m',
    },
  },
  {
    name: 'illegal_customizations',
    gateway: gw('namespace', {}, paramsRef),
    overlay: { deployment: '\nmetadata:\n  name: not-allowed' },
    error: /illegal metadata change/,
  },
  {
    name: 'copy-labels-annotations-disabled-infra-set',
    gateway: gw('default', notSee, {
      infrastructure: { labels: { should: 'see-infra-label' }, annotations: { should: 'see-infra-annotation' } },
    }),
    env: { PILOT_ENABLE_GATEWAY_API_COPY_LABELS_ANNOTATIONS: 'false' },
  },
  {
    name: 'copy-labels-annotations-disabled-infra-nil',
    gateway: gw('default', notSee),
    env: { PILOT_ENABLE_GATEWAY_API_COPY_LABELS_ANNOTATIONS: 'false' },
  },
  {
    name: 'copy-labels-annotations-enabled-infra-nil',
    gateway: gw('default', seeBoth),
    env: { PILOT_ENABLE_GATEWAY_API_COPY_LABELS_ANNOTATIONS: 'true' },
  },
];

/** istiod's test: ambient waypoints on (its init), the class `custom` bound to istiod's controller. */
function optionsFor(c: Case): GatewayDeployOptions {
  return gatewayDeployOptions({ PILOT_ENABLE_AMBIENT: 'true', ...c.env });
}

const CLASSES = new Map([['custom', { spec: { controllerName: 'istio.io/gateway-controller' } }]]);

function applied(c: Case): string {
  const options = optionsFor(c);
  const builtin = injectorSnapshot(undefined, 'builtin', {});
  const injector = { ...builtin, values: parseInjectorValues(c.values ?? 'global:\n  hub: test\n  tag: test', 'case values') };
  const proxyConfig = defaultProxyConfig();
  if (c.distroless === true) proxyConfig.image = create(ProxyImageSchema, { imageType: 'distroless' });
  const controllerName = controllerOf(c.gateway, CLASSES, options);
  const waypoint = rec(c.gateway.spec).gatewayClassName === 'istio-waypoint';
  assert.equal(controllerName, waypoint ? 'istio.io/mesh-controller' : 'istio.io/gateway-controller');
  let out = '';
  if (controllerVersionDecision(c.gateway).writeVersion) out += `${marshalYaml(controllerVersionPatch())}---\n`;
  const render = (): void => {
    const { objects } = renderGateway({
      gateway: c.gateway,
      controllerName,
      injector,
      mesh: defaultMeshConfig(),
      proxyConfig,
      kubeVersion: 128,
      overlays: c.overlay ? [c.overlay] : [],
      options,
    });
    for (const o of objects) out += `${marshalYaml(o)}---\n`;
  };
  if (c.error !== undefined) assert.throws(render, c.error);
  else render();
  return out;
}

describe("Gateway deployment: istiod's deployment-controller goldens", () => {
  for (const c of CASES) {
    it(c.name, () => {
      assert.equal(applied(c), readFileSync(path.join(DIR, `${c.name}.yaml`), 'utf8'));
    });
  }
});

describe('Gateway deployment: ownership rules', () => {
  it('a Gateway with a hostname address, or another class, is not ours', () => {
    const options = gatewayDeployOptions({});
    assert.equal(controllerOf(gw('g', {}), new Map(), options), 'istio.io/gateway-controller');
    assert.equal(controllerOf({ spec: { gatewayClassName: 'other' } }, new Map(), options), undefined);
    assert.equal(
      controllerOf({ spec: { gatewayClassName: 'other' } }, new Map([['other', { spec: { controllerName: 'example.com/x' } }]]), options),
      'example.com/x',
    );
  });
  it('a newer controller version keeps the Gateway; ours or older is taken over', () => {
    const at = (v: string): ReturnType<typeof controllerVersionDecision> =>
      controllerVersionDecision({ metadata: { annotations: { 'gateway.istio.io/controller-version': v } } });
    assert.deepEqual(at('6'), { manage: false, writeVersion: false });
    assert.deepEqual(at('5'), { manage: true, writeVersion: false });
    assert.deepEqual(at('1'), { manage: true, writeVersion: true });
    assert.deepEqual(at('x'), { manage: false, writeVersion: false });
    assert.deepEqual(controllerVersionDecision({ metadata: {} }), { manage: true, writeVersion: true });
  });
});
