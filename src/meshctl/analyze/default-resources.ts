/**
 * What istioctl analyze adds when it reads files only (`--use-kube=false`): the ingress gateway a
 * default install runs — a Pod labelled `istio: ingressgateway` with an `istio-proxy` container and
 * its Service (ports 80, 443, 31400, 15443) in the Istio namespace — so Gateways selecting the
 * default ingress are not reported as selecting nothing. Left out when the mesh config turns the
 * ingress controller off.
 */
import { MeshConfig_IngressControllerMode, type MeshConfig } from '../../gen/mesh/v1alpha1/config_pb.js';
import { addCoreObject, type CoreObjects } from './core-objects.js';

export function addDefaultResources(out: CoreObjects, mesh: MeshConfig, istioNamespace: string): void {
  if (mesh.ingressControllerMode === MeshConfig_IngressControllerMode.OFF) return;
  const service = mesh.ingressService !== '' ? mesh.ingressService : 'istio-ingressgateway';
  // The input's own ingress gateway wins.
  if (out.services.some((s) => s.ref.namespace === istioNamespace && s.ref.name === service)) return;
  const labels = { istio: 'ingressgateway' };
  addCoreObject(
    out,
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `${service}-dummypod`, namespace: istioNamespace, labels },
      spec: { containers: [{ name: 'istio-proxy' }] },
    },
    istioNamespace,
    undefined,
  );
  const port = (name: string, p: number): Record<string, unknown> => ({ name, port: p, protocol: 'TCP', targetPort: p });
  addCoreObject(
    out,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: service, namespace: istioNamespace },
      spec: { ports: [port('http2', 80), port('https', 443), port('tcp', 31400), port('tls', 15443)], selector: labels },
    },
    istioNamespace,
    undefined,
  );
}
