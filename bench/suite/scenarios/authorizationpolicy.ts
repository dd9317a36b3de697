/**
 * Istio's `authorizationpolicy` benchmark input, grown: per namespace, namespace-wide DENY
 * policies (Istio's shape) and an ALLOW policy per workload, so every sidecar's virtualInbound
 * carries RBAC filters. Its own extra step edits one namespace-wide policy.
 */
import { istioDoc, type Mesh } from '../mesh.js';
import type { StepPlan } from '../scenario.js';
import { marker } from '../steps.js';
import { httpScenario, size } from './common.js';

/** Namespace-wide DENY policies per namespace. */
const DENY_PER_NAMESPACE = 10;

function denyPolicy(ns: string, i: number, paths: readonly string[] = []) {
  return istioDoc('AuthorizationPolicy', `deny-${i}`, ns, {
    action: 'DENY',
    rules: [
      { from: [{ source: { namespaces: ['untrusted'] } }], to: [{ operation: { methods: ['POST'], ...(paths.length ? { paths } : {}) } }] },
    ],
  });
}

const policiesFile = (ns: string): string => `${ns}/authorization-policies.yaml`;

function namespacePolicies(mesh: Mesh, ns: string, edited?: string) {
  const docs = Array.from({ length: DENY_PER_NAMESPACE }, (_, i) =>
    denyPolicy(ns, i, i === 0 && edited !== undefined ? [`/${edited}`] : []),
  );
  for (const svc of mesh.services.filter((s) => s.ns === ns)) {
    docs.push(
      istioDoc('AuthorizationPolicy', `allow-${svc.name}`, ns, {
        selector: { matchLabels: { app: svc.name } },
        action: 'ALLOW',
        rules: [
          {
            from: [{ source: { principals: [`cluster.local/ns/${ns}/sa/*`] } }],
            to: [{ operation: { methods: ['GET', 'HEAD'], paths: [`/api/${svc.name}/*`] } }],
          },
        ],
      }),
    );
  }
  return docs;
}

export const authorizationPolicy = {
  ...httpScenario({
    name: 'authorizationpolicy',
    about: `HTTP services with ${DENY_PER_NAMESPACE} namespace-wide DENY AuthorizationPolicies per namespace and an ALLOW policy per workload`,
    defaults: size(100, 3, 500, 200),
    quick: size(20, 2, 20, 10, 0, 4),
    port: 8080,
  }),
  extraFiles: (mesh: Mesh) => new Map(mesh.namespaces.map((ns) => [policiesFile(ns), namespacePolicies(mesh, ns)])),
  extraSteps: (mesh: Mesh): StepPlan[] => {
    const ns = mesh.target.ns;
    const m = marker();
    return [
      {
        name: 'authz',
        label: `AuthorizationPolicy edit (${ns}, namespace-wide)`,
        batches: [[{ file: policiesFile(ns), docs: namespacePolicies(mesh, ns, m) }]],
        intervalMs: 0,
        expect: { kinds: ['sidecar'], namespaces: [ns], holding: { type: 'lds', name: 'virtualInbound' } },
        until: { type: 'lds', scope: 'virtualInbound', contains: [m] },
      },
    ];
  },
};
