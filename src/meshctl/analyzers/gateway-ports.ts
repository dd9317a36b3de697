/**
 * istioctl's gateway.IngressGatewayPortAnalyzer: a Gateway's selector must pick a pod (IST0101
 * `selector`), and each server port must be a TCP port the pods' Services expose — as a
 * targetPort (the port the proxy listens on) or as a service port (IST0162). Any Service of a
 * picked pod's namespace that selects it counts. Both point at the selector's first label.
 */
import { MSG } from '../analyze/messages.js';
import { at, refOf, configsOf, type Analyzer } from '../analyze/model.js';
import { gatewayPods, reportNoGatewayPods, selectorString } from './gateway-selector.js';
import { labelsSubsetOf } from '../../config/index.js';

export const gatewayPortsAnalyzer: Analyzer = {
  name: 'gateway.IngressGatewayPortAnalyzer',
  description: "Checks a gateway's ports against the gateway's Kubernetes service ports",
  messages: [MSG.ReferencedResourceNotFound, MSG.GatewayPortNotDefinedOnService],
  analyze(s, report) {
    for (const gw of configsOf(s, 'Gateway')) {
      const pods = gatewayPods(s, gw);
      if (pods.length === 0) {
        reportNoGatewayPods(s, gw, report);
        continue;
      }
      const exposed = new Set<number>();
      for (const pod of pods) {
        for (const svc of s.services) {
          // A Service without a selector selects every pod, as an empty label selector does.
          if (svc.ref.namespace !== pod.ref.namespace || !labelsSubsetOf(svc.selector ?? {}, pod.labels)) continue;
          for (const p of svc.ports) {
            if (p.protocol !== 'TCP') continue;
            // A named targetPort is not a number: the service port stands for it.
            const target = /^\d+$/.test(p.targetPort) ? Number(p.targetPort) : 0;
            exposed.add(target !== 0 ? target : p.port);
            exposed.add(p.port);
          }
        }
      }
      const resource = refOf(gw);
      const first = Object.keys(gw.spec.selector).sort()[0] ?? '';
      for (const srv of gw.spec.servers) {
        if (!srv.port || exposed.has(srv.port.number)) continue;
        report({
          type: MSG.GatewayPortNotDefinedOnService,
          resource,
          args: [srv.port.number, selectorString(gw.spec.selector)],
          ...at(s, resource, `spec.selector.${first}`),
        });
      }
    }
  },
};
