/**
 * istioctl's service.PortNameAnalyzer: a Service port whose protocol cannot be told from its
 * `appProtocol` or its name prefix (`http-web`, `grpc`, …) gets protocol sniffing (IST0118, at the
 * port); on an ExternalName Service such a port, or one named `tcp`, is IST0150 instead.
 * System namespaces, the Istio control plane (an `istio` label or `release: istio`) and the
 * gateways istiod deploys (`gateway.istio.io/managed`) are skipped, as istioctl does.
 */
import { MSG } from '../analyze/messages.js';
import { at, type Analyzer, type ServicePort } from '../analyze/model.js';
import { isIstioControlPlane } from './application-uid.js';

const MANAGED_GATEWAY_CONTROLLERS = new Set(['istio.io-gateway-controller', 'istio.io-mesh-controller', 'istio.io-eastwest-controller']);

const SYSTEM_NAMESPACES = new Set(['kube-system', 'kube-public', 'kube-node-lease', 'local-path-storage']);

/** Istio's protocol names (pkg/config/protocol), matched case-insensitively. */
const PROTOCOLS = new Set(['tcp', 'udp', 'grpc', 'grpc-web', 'http', 'http_proxy', 'http2', 'https', 'tls', 'mongo', 'redis', 'mysql']);

/** Whether Istio's kube ConvertProtocol finds a protocol for the port (udp, appProtocol, or the name's prefix). */
export function knownProtocol(p: ServicePort): boolean {
  if (p.protocol.toUpperCase() === 'UDP') return true;
  if (
    p.appProtocol !== undefined &&
    (PROTOCOLS.has(p.appProtocol.toLowerCase()) ||
      ['h2c', 'ws', 'wss', 'kubernetes.io/h2c', 'kubernetes.io/ws', 'kubernetes.io/wss'].includes(p.appProtocol.toLowerCase()))
  )
    return true;
  const name = p.name.toLowerCase();
  if (name.startsWith('grpc-web')) return true;
  const dash = name.indexOf('-');
  return PROTOCOLS.has(dash >= 0 ? name.slice(0, dash) : name);
}

export const portNameAnalyzer: Analyzer = {
  name: 'service.PortNameAnalyzer',
  description: 'Checks the port names associated with each service',
  messages: [MSG.PortNameIsNotUnderNamingConvention, MSG.ExternalNameServiceTypeInvalidPortName],
  analyze(s, report) {
    for (const svc of s.services) {
      if (SYSTEM_NAMESPACES.has(svc.ref.namespace)) continue;
      // The control plane (an `istio` label, or `release: istio`) and gateways istiod deploys and names itself.
      if (isIstioControlPlane(svc.labels) || MANAGED_GATEWAY_CONTROLLERS.has(svc.labels['gateway.istio.io/managed'] ?? '')) continue;
      const external = svc.type === 'ExternalName';
      svc.ports.forEach((p, i) => {
        if (knownProtocol(p) && !(external && p.name === 'tcp')) return;
        const line = at(s, svc.ref, `spec.ports[${i}]`);
        if (external) report({ type: MSG.ExternalNameServiceTypeInvalidPortName, resource: svc.ref, args: [], ...line });
        else report({ type: MSG.PortNameIsNotUnderNamingConvention, resource: svc.ref, args: [p.name, p.port, p.targetPort], ...line });
      });
    }
  },
};
