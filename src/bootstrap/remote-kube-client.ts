/**
 * The one place that turns a remote cluster's kubeconfig TEXT (a data key of an
 * `istio/multiCluster=true` Secret) into a client config. Kept alone so the Kubernetes client
 * behind it can be swapped without touching the secret controller.
 */
import { parse } from 'yaml';
import { fromKubeconfigText, type KubeConfig } from '../kube/index.js';

/**
 * Fields that make a client run a program or send a local file. A Secret is written by anyone who
 * may edit Secrets of the system namespace, so, as istiod's NewUntrustedRestConfig
 * (pkg/kube/util.go sanitizeKubeConfig), such a kubeconfig is refused: it would run code or leak
 * files of the control plane's host. An auth provider is allowed only when it is `oidc`.
 */
const UNTRUSTED_USER_FIELDS = ['exec', 'tokenFile', 'client-certificate', 'client-key'] as const;

interface KubeconfigShape {
  readonly users?: readonly { readonly name?: string; readonly user?: Readonly<Record<string, unknown>> }[];
}

/**
 * A client config from kubeconfig text, with its current context. Throws, naming the field, when
 * the text is not a kubeconfig, has no current cluster, or asks for a plugin or a local file.
 * `origin` names the text in errors (the Secret and key).
 */
export function kubeConfigFromText(text: string, origin = '<remote kubeconfig>'): KubeConfig {
  let shape: KubeconfigShape;
  try {
    shape = (parse(text) ?? {}) as KubeconfigShape;
  } catch (err) {
    throw new Error(`not a kubeconfig: ${(err as Error).message.split('\n')[0] ?? ''}`, { cause: err });
  }
  if (typeof shape !== 'object' || Array.isArray(shape)) throw new Error('not a kubeconfig: the text is not a YAML mapping');
  for (const [i, u] of (shape.users ?? []).entries()) {
    const where = `users[${i}] (${u.name ?? ''}).user`;
    for (const field of UNTRUSTED_USER_FIELDS) {
      if (u.user?.[field] !== undefined) throw new Error(`${where}.${field} is not allowed in a remote kubeconfig`);
    }
    const provider = (u.user?.['auth-provider'] as { name?: unknown } | undefined)?.name;
    if (provider !== undefined && provider !== 'oidc')
      throw new Error(`${where}.auth-provider ${JSON.stringify(provider)} is not allowed in a remote kubeconfig (only oidc)`);
  }
  const kc = fromKubeconfigText(text, { origin });
  if (!/^https?:\/\//.test(kc.server)) throw new Error(`${origin}: the cluster's server ${JSON.stringify(kc.server)} is not a URL`);
  return kc;
}
