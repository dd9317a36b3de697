/**
 * istiod's readiness check before validation goes fail-closed: a dry-run CREATE of an invalid
 * Gateway (no servers) in the system namespace, labelled with our revision. Refused by a webhook
 * ("denied the request"): validation works end to end, through the API server's TLS to us. Gateway
 * CRD missing, or a webhook that cannot take dry runs: nothing more to learn, count it as ready (as
 * istiod). Anything else, including the Gateway being accepted: not ready yet.
 */
import { KubeApiError, kubeClient, type KubeConfig } from '../kube/index.js';
import { errorMessage } from '../util/errors.js';
import type { FailCloseProbe } from './ca-bundle-patcher.js';
import { REVISION_LABEL } from '../config/constants.js';

const DENIED = 'denied the request';
const MISSING_RESOURCE = 'the server could not find the requested resource';
const NO_DRY_RUN = 'does not support dry run';

export function dryRunInvalidGatewayProbe(kubeConfig: KubeConfig, namespace: string, revision: string): FailCloseProbe {
  const api = kubeClient(kubeConfig);
  return async () => {
    const body = {
      apiVersion: 'networking.istio.io/v1alpha3',
      kind: 'Gateway',
      metadata: { name: 'invalid-gateway', namespace, labels: { [REVISION_LABEL]: revision } },
      spec: {},
    };
    try {
      await api.create(`/apis/networking.istio.io/v1alpha3/namespaces/${encodeURIComponent(namespace)}/gateways`, body, { dryRun: 'All' });
      return { ready: false, reason: 'dummy invalid config not rejected' };
    } catch (err) {
      const text = err instanceof KubeApiError ? `${err.status} ${err.message}` : errorMessage(err);
      if (text.includes(DENIED)) return { ready: true, reason: 'dry-run invalid Gateway denied by a validating webhook' };
      if (err instanceof KubeApiError && err.status === 404 && text.includes(MISSING_RESOURCE))
        return { ready: true, reason: 'no Gateway CRD: cannot check, assuming validation is ready' };
      if (text.includes(NO_DRY_RUN))
        return { ready: true, reason: 'a validating webhook does not support dry run: cannot check, assuming validation is ready' };
      return { ready: false, reason: `dummy invalid config rejected for the wrong reason: ${text.slice(0, 300)}` };
    }
  };
}
