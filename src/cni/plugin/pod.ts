import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { KubeApiError, kubeClient, loadKubeConfig, statusCodeOf, type KubeClient } from '../../kube/index.js';
import { CniCode, CniError } from './errors.js';

/** Reads one pod; the plugin's only Kubernetes call. */
export type PodReader = (namespace: string, name: string) => Promise<V1Pod>;

export interface PodReaderOptions {
  readonly kubeconfig: string;
  /** istio-cni retries the lookup 30 times, 1 s apart, while the API is unreachable. */
  readonly attempts?: number;
  readonly intervalMs?: number;
}

/** A reader through the plugin config's kubeconfig; a 4xx answer (but 429) fails at once. */
export function kubePodReader(opts: PodReaderOptions): PodReader {
  let api: KubeClient | undefined;
  return async (namespace, name) => {
    if (!api) {
      try {
        api = kubeClient(loadKubeConfig({ kubeconfig: opts.kubeconfig }));
      } catch (err) {
        throw new CniError(
          CniCode.INVALID_NETWORK_CONFIG,
          `cannot load kubernetes.kubeconfig ${opts.kubeconfig}: ${(err as Error).message}`,
        );
      }
    }
    const attempts = opts.attempts ?? 30;
    let last: unknown;
    for (let i = 0; i < attempts; i++) {
      try {
        return await api.get<V1Pod>(`/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`);
      } catch (err) {
        last = err;
        const status = statusCodeOf(err);
        if (status !== undefined && status >= 400 && status < 500 && status !== 429) break;
        if (i + 1 < attempts) await sleep(opts.intervalMs ?? 1000);
      }
    }
    const status = statusCodeOf(last);
    const why = status !== undefined ? `HTTP ${status}` : ((last as Error).message ?? String(last));
    throw new CniError(
      CniCode.POD_LOOKUP_FAILED,
      `cannot read pod ${namespace}/${name} from the Kubernetes API: ${why}`,
      last instanceof KubeApiError ? last.message : '',
    );
  };
}
