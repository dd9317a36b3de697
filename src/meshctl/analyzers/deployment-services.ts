/**
 * istioctl's deployment.MultiServiceAnalyzer: for each Deployment in the mesh (proxy container in
 * its template, `sidecar.istio.io/inject: "true"` on the template, or an injected namespace;
 * waypoints skipped), the Services of its namespace that select its pods must not use one port
 * with two protocols (IST0116) nor one targetPort for two ports (IST0137). At `metadata.name`.
 */
import { MSG } from '../analyze/messages.js';
import { at, type Analyzer, type K8sDeployment, type K8sService, type Snapshot } from '../analyze/model.js';
import { labelsSubsetOf } from '../../config/index.js';
import { NAMESPACE_INJECTION_LABEL, PROXY_CONTAINER, SIDECAR_INJECT } from '../../config/constants.js';

function inMesh(s: Snapshot, d: K8sDeployment): boolean {
  if (d.template.containers.some((c) => c.name === PROXY_CONTAINER && c.image !== '')) return true;
  // A label decides before an annotation, and either before the namespace.
  const opt = d.template.labels[SIDECAR_INJECT] ?? d.template.annotations[SIDECAR_INJECT];
  if (opt !== undefined) return opt === 'true';
  const ns = s.namespaces.find((n) => n.ref.name === d.ref.namespace);
  return ns?.labels[NAMESPACE_INJECTION_LABEL] === 'enabled';
}

const isWaypoint = (d: K8sDeployment): boolean => d.labels['gateway.istio.io/managed'] === 'istio.io-mesh-controller';

function matchingServices(s: Snapshot, d: K8sDeployment): K8sService[] {
  return s.services.filter(
    (svc) =>
      svc.ref.namespace === d.ref.namespace &&
      svc.selector !== undefined &&
      Object.keys(svc.selector).length > 0 &&
      labelsSubsetOf(svc.selector, d.template.labels),
  );
}

const byNumber = (a: number, b: number): number => a - b;

export const deploymentServicesAnalyzer: Analyzer = {
  name: 'deployment.MultiServiceAnalyzer',
  description: 'Checks association between services and pods',
  messages: [MSG.DeploymentAssociatedToMultipleServices, MSG.DeploymentConflictingPorts],
  analyze(s, report) {
    for (const d of s.deployments) {
      if (isWaypoint(d) || !inMesh(s, d)) continue;
      const resource = d.ref;
      const line = at(s, resource, 'metadata.name');
      const svcs = matchingServices(s, d);
      // port → protocol → Service names
      const protocols = new Map<number, Map<string, string[]>>();
      // targetPort → port → Service name (a later Service wins, as istioctl's map)
      const targets = new Map<string, Map<number, string>>();
      for (const svc of svcs) {
        const name = `${svc.ref.namespace}/${svc.ref.name}`;
        for (const p of svc.ports) {
          const byProtocol = protocols.get(p.port) ?? new Map<string, string[]>();
          const protocol = p.protocol === '' ? 'TCP' : p.protocol;
          byProtocol.set(protocol, [...(byProtocol.get(protocol) ?? []), name]);
          protocols.set(p.port, byProtocol);
          const tp = p.targetPort === '' || p.targetPort === '0' ? String(p.port) : p.targetPort;
          const ports = targets.get(tp) ?? new Map<number, string>();
          ports.set(p.port, name);
          targets.set(tp, ports);
        }
      }
      for (const port of [...protocols.keys()].sort(byNumber)) {
        const byProtocol = protocols.get(port);
        if (!byProtocol || byProtocol.size < 2) continue;
        report({
          type: MSG.DeploymentAssociatedToMultipleServices,
          resource,
          args: [d.ref.name, port, [...byProtocol.values()].flat().sort()],
          ...line,
        });
      }
      for (const [tp, ports] of [...targets].sort(([a], [b]) => a.localeCompare(b))) {
        if (ports.size < 2) continue;
        report({
          type: MSG.DeploymentConflictingPorts,
          resource,
          args: [d.ref.name, [...ports.values()].sort(), tp, [...ports.keys()].sort(byNumber)],
          ...line,
        });
      }
    }
  },
};
