import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { strategicMerge } from './strategic-merge.js';

describe('strategicMerge (corev1.Pod patch metadata)', () => {
  it('merges containers by name, env by name, volumeMounts by mountPath, ports by containerPort; appends new ones', () => {
    const pod = {
      spec: {
        containers: [
          { name: 'app', image: 'app:1', env: [{ name: 'A', value: '1' }], ports: [{ containerPort: 80, name: 'http' }] },
          { name: 'istio-proxy', resources: { limits: { cpu: '1' } }, volumeMounts: [{ mountPath: '/x', name: 'x' }] },
        ],
        volumes: [{ name: 'data', emptyDir: {} }],
      },
    };
    const patch = {
      spec: {
        containers: [
          {
            name: 'istio-proxy',
            image: 'proxyv2',
            env: [{ name: 'B', value: '2' }],
            volumeMounts: [
              { mountPath: '/x', name: 'y' },
              { mountPath: '/z', name: 'z' },
            ],
          },
          { name: 'app', env: [{ name: 'A', value: 'changed' }], ports: [{ containerPort: 15090, name: 'http-envoy-prom' }] },
        ],
        initContainers: [{ name: 'istio-init', args: ['istio-iptables'] }],
        volumes: [{ name: 'istio-envoy', emptyDir: { medium: 'Memory' } }],
      },
    };
    // Elements named in the patch come in the patch's order, new ones before the original-only ones.
    assert.deepEqual(strategicMerge(pod, patch), {
      spec: {
        containers: [
          {
            name: 'istio-proxy',
            resources: { limits: { cpu: '1' } },
            image: 'proxyv2',
            env: [{ name: 'B', value: '2' }],
            volumeMounts: [
              { mountPath: '/x', name: 'y' },
              { mountPath: '/z', name: 'z' },
            ],
          },
          {
            name: 'app',
            image: 'app:1',
            env: [{ name: 'A', value: 'changed' }],
            ports: [
              { containerPort: 15090, name: 'http-envoy-prom' },
              { containerPort: 80, name: 'http' },
            ],
          },
        ],
        initContainers: [{ name: 'istio-init', args: ['istio-iptables'] }],
        volumes: [
          { name: 'istio-envoy', emptyDir: { medium: 'Memory' } },
          { name: 'data', emptyDir: {} },
        ],
      },
    });
    // Inputs are not modified.
    assert.deepEqual(pod.spec.containers[0], {
      name: 'app',
      image: 'app:1',
      env: [{ name: 'A', value: '1' }],
      ports: [{ containerPort: 80, name: 'http' }],
    });
  });

  it('replaces lists without a merge key (args, tolerations) and deletes keys set to null', () => {
    const pod = { spec: { containers: [{ name: 'c', args: ['a', 'b'], securityContext: { runAsUser: 5 } }], tolerations: [{ key: 'x' }] } };
    const patch = { spec: { containers: [{ name: 'c', args: ['z'], securityContext: null }], tolerations: [{ key: 'y' }] } };
    assert.deepEqual(strategicMerge(pod, patch), { spec: { containers: [{ name: 'c', args: ['z'] }], tolerations: [{ key: 'y' }] } });
  });

  it('drops nulls inside new elements (a volume whose source is `emptyDir:` with no value)', () => {
    const merged = strategicMerge({ spec: {} }, { spec: { volumes: [{ name: 'workload-socket', emptyDir: null }] } });
    assert.deepEqual(merged, { spec: { volumes: [{ name: 'workload-socket' }] } });
  });

  it('an empty list in the patch leaves a merge list alone; $patch directives', () => {
    const pod = { spec: { initContainers: [{ name: 'a' }, { name: 'b' }], securityContext: { runAsUser: 1, fsGroup: 2 } } };
    assert.deepEqual(strategicMerge(pod, { spec: { initContainers: [] } }), pod);
    assert.deepEqual(strategicMerge(pod, { spec: { initContainers: [{ name: 'a', $patch: 'delete' }] } }).spec, {
      initContainers: [{ name: 'b' }],
      securityContext: { runAsUser: 1, fsGroup: 2 },
    });
    assert.deepEqual(strategicMerge(pod, { spec: { securityContext: { $patch: 'replace', runAsUser: 7 } } }).spec, {
      initContainers: [{ name: 'a' }, { name: 'b' }],
      securityContext: { runAsUser: 7 },
    });
  });

  it('orders as apimachinery: patch elements in patch order, interleaved with the original-only ones by original position', () => {
    const original = { spec: { volumes: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] } };
    // b is in both: a (original-only, before b) stays first; the new x comes before c.
    assert.deepEqual(strategicMerge(original, { spec: { volumes: [{ name: 'b', emptyDir: {} }, { name: 'x' }] } }).spec, {
      volumes: [{ name: 'a' }, { name: 'b', emptyDir: {} }, { name: 'x' }, { name: 'c' }],
    });
    assert.deepEqual(strategicMerge(original, { spec: { volumes: [{ name: 'z' }, { $patch: 'replace' }] } }).spec, {
      volumes: [{ name: 'z' }],
    });
  });

  it('finalizers are a set', () => {
    assert.deepEqual(strategicMerge({ metadata: { finalizers: ['a', 'b'] } }, { metadata: { finalizers: ['b', 'c'] } }), {
      metadata: { finalizers: ['a', 'b', 'c'] },
    });
  });
});
