/**
 * istioctl's applicationUID.Analyzer (IST0144): a Pod or Deployment whose pod or application
 * container runs as UID 1337, the sidecar proxy's own UID (its traffic would bypass the proxy).
 * The control plane (an `istio` label, or `release: istio`) and the proxy containers are exempt.
 */
import { MSG } from '../analyze/messages.js';
import { objectsOf, type Analyzer } from '../analyze/model.js';
import { podSpecOf, recordsAt, fieldAt } from './k8s-fields.js';

const PROXY_UID = 1337;
const PROXY_CONTAINERS = new Set(['istio-proxy', 'istio-operator']);

export const isIstioControlPlane = (labels: Readonly<Record<string, string>>): boolean =>
  Object.hasOwn(labels, 'istio') || labels.release === 'istio';

export const applicationUidAnalyzer: Analyzer = {
  name: 'applicationUID.Analyzer',
  description: 'Checks invalid application UID',
  messages: [MSG.InvalidApplicationUID],
  analyze(s, report) {
    for (const kind of ['Pod', 'Deployment']) {
      for (const o of objectsOf(s, kind)) {
        if (isIstioControlPlane(o.labels)) continue;
        const spec = podSpecOf(o.body, kind);
        const runsAsProxy =
          fieldAt(spec, 'securityContext', 'runAsUser') === PROXY_UID ||
          recordsAt(spec, 'containers').some(
            (c) => !PROXY_CONTAINERS.has(String(c.name)) && fieldAt(c, 'securityContext', 'runAsUser') === PROXY_UID,
          );
        if (runsAsProxy) report({ type: MSG.InvalidApplicationUID, resource: o.ref, args: [] });
      }
    }
  },
};
