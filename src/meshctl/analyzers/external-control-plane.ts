/**
 * istioctl's externalcontrolplane.ExternalControlPlaneAnalyzer: the webhooks of a remote cluster's
 * Istio (`istio-sidecar-injector*` mutating, `istio-validator*` or `istiod-default-validator`
 * validating) must reach the external control plane: a webhook with neither a URL nor a service
 * is IST0163, a URL that is not a URL is IST0163, and one whose host is an IP address is IST0164.
 */
import { isIP } from 'node:net';
import { MSG } from '../analyze/messages.js';
import { objectsOf, type Analyzer, type K8sObject, type Report } from '../analyze/model.js';
import { fieldAt, recordsAt } from './k8s-fields.js';

function checkWebhooks(o: K8sObject, report: Report): void {
  for (const hook of recordsAt(o.body, 'webhooks')) {
    const name = String(hook.name ?? '');
    const url = fieldAt(hook, 'clientConfig', 'url');
    if (typeof url === 'string') {
      let host: string;
      try {
        // Go's URL.Hostname(): the host without port and IPv6 brackets.
        host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
      } catch {
        // Go's url.Parse takes a relative reference (no host: nothing to say); an absolute URL that does not parse is reported.
        if (url.includes('://'))
          report({ type: MSG.InvalidExternalControlPlaneConfig, resource: o.ref, args: [url, name, 'was provided in an invalid format'] });
        continue;
      }
      if (isIP(host) !== 0) report({ type: MSG.ExternalControlPlaneAddressIsNotAHostname, resource: o.ref, args: [url, name] });
    } else if (fieldAt(hook, 'clientConfig', 'service') === undefined) {
      report({ type: MSG.InvalidExternalControlPlaneConfig, resource: o.ref, args: ['', name, 'is blank'] });
    }
  }
}

export const externalControlPlaneAnalyzer: Analyzer = {
  name: 'externalcontrolplane.ExternalControlPlaneAnalyzer',
  description: 'Checks that the remote IstioOperator resources reference an external control plane',
  messages: [MSG.InvalidExternalControlPlaneConfig, MSG.ExternalControlPlaneAddressIsNotAHostname],
  analyze(s, report) {
    for (const o of objectsOf(s, 'ValidatingWebhookConfiguration')) {
      const n = o.ref.name;
      if (n === 'istiod-default-validator' || n.startsWith('istio-validator')) checkWebhooks(o, report);
    }
    for (const o of objectsOf(s, 'MutatingWebhookConfiguration'))
      if (o.ref.name.startsWith('istio-sidecar-injector')) checkWebhooks(o, report);
  },
};
