/**
 * A `TokenReviewer` backed by the API server (authentication.k8s.io/v1 TokenReview, as istiod's
 * ValidateK8sJwt): one review per CSR or ADS authentication. A caller that names another ClusterID
 * is reviewed by that remote cluster's API server (multicluster: istiod's GetRemoteKubeClient), and
 * refused when no such cluster is known, as istiod does. A refused call (RBAC) is logged as an
 * error naming the missing permission.
 */
import type { V1TokenReview } from '@kubernetes/client-node';
import { kubeClient, statusCodeOf, type KubeConfig } from '../../kube/index.js';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { TokenReviewer, TokenReviewResult } from '../authn/token-review.js';

export interface KubeTokenReviewerOptions {
  readonly kubeConfig: KubeConfig;
  /** --clusterID: the ClusterID callers of this cluster send (istio-agent's CLUSTER_ID). */
  readonly clusterId: string;
  /** The client config of a remote cluster by id (the multicluster Secrets), if one is known. */
  readonly remoteKubeConfig?: (clusterId: string) => KubeConfig | undefined;
  readonly logger: Logger;
}

export function kubeTokenReviewer(opts: KubeTokenReviewerOptions): TokenReviewer {
  const local = kubeClient(opts.kubeConfig);
  return async (token, audiences, clusterId): Promise<TokenReviewResult> => {
    let api = local;
    if (clusterId !== undefined && clusterId !== '' && clusterId !== opts.clusterId) {
      const kc = opts.remoteKubeConfig?.(clusterId);
      if (!kc)
        return {
          authenticated: false,
          error: `no Kubernetes client for cluster "${clusterId}" (this meshpilot knows cluster "${opts.clusterId}")`,
        };
      api = kubeClient(kc);
    }
    let review;
    try {
      review = await api.create<V1TokenReview>('/apis/authentication.k8s.io/v1/tokenreviews', {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token, ...(audiences.length > 0 ? { audiences: [...audiences] } : {}) },
      });
    } catch (err) {
      const status = statusCodeOf(err);
      if (status === 403) {
        opts.logger.error(
          'TokenReview forbidden: meshpilot\'s service account needs "create" on tokenreviews.authentication.k8s.io (see manifests/rbac)',
          { status, error: errorMessage(err) },
        );
      } else {
        opts.logger.warn('TokenReview request failed', { status, error: errorMessage(err) });
      }
      return {
        authenticated: false,
        error: `TokenReview request failed${status !== undefined ? ` (HTTP ${status})` : ''}: ${errorMessage(err)}`,
      };
    }
    const s = review.status ?? {};
    const user = s.user ?? {};
    return {
      authenticated: s.authenticated === true,
      ...(user.username !== undefined ? { username: user.username } : {}),
      ...(user.groups !== undefined ? { groups: user.groups } : {}),
      ...(user.extra !== undefined ? { extra: user.extra } : {}),
      ...(s.audiences !== undefined ? { audiences: s.audiences } : {}),
      ...(s.error ? { error: s.error } : {}),
    };
  };
}
