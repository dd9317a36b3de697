import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../config/sources/kube/kube-client.js';
import { CniCode, CniError } from './errors.js';

/** Reads one pod; the plugin's only Kubernetes call. */
export type PodReader = (namespace: string, name: string) => Promise<V1Pod>;

export interface PodReaderOptions {
  readonly kubeconfig: string;
  /** istio-cni retries the lookup 30 times, 1 s apart, while the API is unreachable. */
  readonly attempts?: number;
  readonly intervalMs?: number;
}

function statusOf(err: unknown): number | undefined {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}

/** A reader through the plugin config's kubeconfig; a 4xx answer (but 429) fails at once. */
export function kubePodReader(opts: PodReaderOptions): PodReader {
  let api: CoreV1Api | undefined;
  return async (namespace, name) => {
    if (!api) {
      try {
        api = loadKubeConfig({ kubeconfig: opts.kubeconfig }).makeApiClient(CoreV1Api);
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
        return await api.readNamespacedPod({ namespace, name });
      } catch (err) {
        last = err;
        const status = statusOf(err);
        if (status !== undefined && status >= 400 && status < 500 && status !== 429) break;
        if (i + 1 < attempts) await sleep(opts.intervalMs ?? 1000);
      }
    }
    const status = statusOf(last);
    const why = status !== undefined ? `HTTP ${status}` : ((last as Error).message ?? String(last));
    throw new CniError(
      CniCode.POD_LOOKUP_FAILED,
      `cannot read pod ${namespace}/${name} from the Kubernetes API: ${why}`,
      String((last as { body?: unknown }).body ?? ''),
    );
  };
}
