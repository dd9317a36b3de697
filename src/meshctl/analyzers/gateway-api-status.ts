/**
 * meshpilot's Gateway API status analyzer (IST0900, not in istioctl): computes the conditions
 * istiod would write on GatewayClasses, Gateways, listeners and route parents
 * (src/model/gateway-api) and reports every one in a failed state, with its reason and message —
 * in file mode that is where a user sees why a route is not attached or a listener not programmed.
 */
import { type ConfigSnapshot, ConfigStore } from '../../config/index.js';
import type { Condition, ObjectStatus } from '../../model/index.js';
import { gatewayApiStatus } from '../../model/gateway-api/gateway-api-model.js';
import { buildServiceEntryRegistry, type RegistrySnapshot, type Service } from '../../registry/index.js';
import { MSG } from '../analyze/messages.js';
import type { Analyzer, ResourceRef, Snapshot } from '../analyze/model.js';

/** A condition is failed when it is not in its success state (Conflicted's success is False). */
const failed = (c: Condition): boolean => (c.type === 'Conflicted' ? c.status === 'True' : c.status === 'False');

/** ServiceEntries of the config, plus the Kubernetes Services read from files (existence only: no endpoints). */
function registryOf(config: ConfigSnapshot, s: Snapshot): RegistrySnapshot {
  const base = buildServiceEntryRegistry(config);
  const k8s = new Map<string, Service>(
    s.services.map((svc) => {
      const hostname = `${svc.ref.name}.${svc.ref.namespace}.svc.${s.domain}`;
      const service: Service = {
        hostname,
        namespace: svc.ref.namespace,
        ports: [],
        resolution: 'STATIC',
        addresses: [],
        meshExternal: false,
        exportTo: ['*'],
        source: { kind: 'ServiceEntry', namespace: svc.ref.namespace, name: svc.ref.name },
      };
      return [hostname, service];
    }),
  );
  return {
    ...base,
    services: [...base.services, ...k8s.values()],
    serviceByHost: (h, ns) => base.serviceByHost(h, ns) ?? k8s.get(h),
    endpoints: (h, p, ns) => base.endpoints(h, p, ns),
    instancesAt: (a) => base.instancesAt(a),
  };
}

function describe(st: ObjectStatus): { where: string; conditions: readonly Condition[] }[] {
  switch (st.kind) {
    case 'GatewayClass':
      return [{ where: 'GatewayClass', conditions: st.status.conditions }];
    case 'Gateway':
      return [
        { where: 'Gateway', conditions: st.status.conditions },
        ...st.status.listeners.map((l) => ({ where: `listener ${l.name}`, conditions: l.conditions })),
      ];
    default:
      return st.status.parents.map((p) => ({
        where: `parent ${String(p.parentRef.kind)} ${String(p.parentRef.namespace ?? st.namespace)}/${String(p.parentRef.name)}${p.parentRef.sectionName !== undefined ? `/${String(p.parentRef.sectionName)}` : ''}`,
        conditions: p.conditions,
      }));
  }
}

export const gatewayApiStatusAnalyzer: Analyzer = {
  name: 'gatewayapi.StatusAnalyzer',
  description: 'Computes the Gateway API status conditions istiod writes and reports the failed ones',
  messages: [MSG.GatewayAPIConditionFailed],
  analyze(s, report) {
    if (!s.configs.some((c) => c.meta.kind === 'KubernetesGateway' || c.meta.kind.endsWith('Route'))) return;
    const store = new ConfigStore();
    store.apply(s.configs.map((config) => ({ type: 'upsert' as const, config })));
    const config = store.snapshot();
    for (const st of gatewayApiStatus(config, { domain: s.domain, registry: registryOf(config, s), secretsInConfig: true })) {
      const kind = st.kind === 'Gateway' ? 'KubernetesGateway' : st.kind;
      const origin = s.configs.find((c) => c.meta.kind === kind && c.meta.namespace === st.namespace && c.meta.name === st.name)?.meta
        .origin;
      const resource: ResourceRef = { kind: st.kind, namespace: st.namespace, name: st.name, ...(origin ? { origin } : {}) };
      for (const { where, conditions } of describe(st)) {
        for (const c of conditions.filter(failed))
          report({ type: MSG.GatewayAPIConditionFailed, resource, args: [where, c.type, c.status, c.reason, c.message] });
      }
    }
  },
};
