/**
 * istioctl's multicluster.ServiceAnalyzer (IST0170): a Service of the same namespace and name in
 * several clusters of the mesh is one service to istiod, so its clusters must agree on it — the
 * same type, the same ports, and all headless or none.
 *
 * The primary cluster (files and `-k`) is istioctl's `default`; the others come from
 * --remote-contexts. Istio compares against whichever cluster its map yields first and joins the
 * reasons in map order; here the primary (or else the first cluster by id) is the reference, and
 * clusters and reasons are sorted, so one input always gives one message.
 *
 * Compared as the API server stores a Service, whatever the source: an unset type is ClusterIP, an
 * unset port protocol TCP, an unset targetPort the port. Node ports are left out: each cluster
 * allocates its own, so they differ for any NodePort Service not pinned by hand.
 */
import { MSG } from '../analyze/messages.js';
import { fullName, objectsOf, PRIMARY_CLUSTER, type Analyzer, type K8sObject } from '../analyze/model.js';
import { fieldAt, recordsAt, stringAt } from './k8s-fields.js';

/** What must agree across clusters, as the API server would default it. */
interface ServiceShape {
  readonly type: string;
  readonly headless: boolean;
  /** Each port's canonical JSON, sorted by port name (istioctl sorts by name before comparing). */
  readonly ports: readonly string[];
}

function shapeOf(svc: K8sObject): ServiceShape {
  const spec = fieldAt(svc.body, 'spec');
  const ports = recordsAt(spec, 'ports')
    .map((p) => {
      const port = fieldAt(p, 'port');
      const target = fieldAt(p, 'targetPort');
      return {
        name: stringAt(p, 'name') ?? '',
        json: JSON.stringify([
          stringAt(p, 'name') ?? '',
          stringAt(p, 'protocol') ?? 'TCP',
          stringAt(p, 'appProtocol') ?? '',
          port,
          target === undefined || target === '' || target === 0 ? port : target,
        ]),
      };
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((p) => p.json);
  return { type: stringAt(spec, 'type') ?? 'ClusterIP', headless: stringAt(spec, 'clusterIP') === 'None', ports };
}

const HEADLESS_MIXED = 'service has mixed mode like headless and clusterIP';
const TYPE_DIFFERS = 'service type is inconsistent';
const PORTS_DIFFER = 'service ports are inconsistent';

export const multiClusterServicesAnalyzer: Analyzer = {
  name: 'services.MultiClusterServiceAnalyzer',
  description: 'Check the validity of services in the multi-cluster environment',
  messages: [MSG.MultiClusterInconsistentService],
  analyze(s, report) {
    if (s.remoteClusters.length === 0) return;
    /** `ns/name` → cluster id → the Service there; the primary first, then the remote clusters by id. */
    const byName = new Map<string, Map<string, K8sObject>>();
    const add = (cluster: string, svc: K8sObject): void => {
      const key = fullName(svc.ref);
      const clusters = byName.get(key) ?? new Map<string, K8sObject>();
      byName.set(key, clusters);
      if (!clusters.has(cluster)) clusters.set(cluster, svc);
    };
    for (const svc of objectsOf(s, 'Service')) add(PRIMARY_CLUSTER, svc);
    const remotes = [...s.remoteClusters].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (const rc of remotes) for (const svc of rc.services) add(rc.id, svc);

    for (const clusters of byName.values()) {
      if (clusters.size < 2) continue;
      const entries = [...clusters].map(([id, svc]) => ({ id, svc, shape: shapeOf(svc) }));
      const first = entries[0];
      if (!first) continue;
      const inconsistent = new Set<string>();
      const reasons = new Set<string>();
      for (const e of entries) {
        if (e.shape.headless !== first.shape.headless) {
          // Mixed modes make every cluster part of the problem.
          for (const x of entries) inconsistent.add(x.id);
          reasons.add(HEADLESS_MIXED);
        }
        if (e.shape.type !== first.shape.type) {
          inconsistent.add(e.id);
          reasons.add(TYPE_DIFFERS);
        }
        if (e.shape.ports.join('\n') !== first.shape.ports.join('\n')) {
          inconsistent.add(e.id);
          reasons.add(PORTS_DIFFER);
        }
      }
      if (inconsistent.size === 0) continue;
      inconsistent.add(first.id);
      const ref = first.svc.ref;
      report({
        type: MSG.MultiClusterInconsistentService,
        resource: ref,
        args: [ref.name, ref.namespace, [...inconsistent].sort(), [...reasons].sort().join('; ')],
      });
    }
  },
};
