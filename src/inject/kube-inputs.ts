/**
 * Injection's inputs from a cluster, as istiod's injector gets them: the `istio-sidecar-injector`
 * ConfigMap (`-<revision>` for a revision) and the `istio` mesh ConfigMap in the system namespace,
 * Namespace labels (for the webhook selectors), revision tags pointing at this revision (the
 * `istio.io/tag`-labelled MutatingWebhookConfigurations istioctl tag / the chart create), and Nodes (ENABLE_NATIVE_SIDECARS=auto: native
 * sidecars when the pod's node — or every node — runs kubelet 1.33 or newer, istiod's
 * DetectNativeSidecar). All watched; `injectionOptions()` gives the /inject handler's options.
 */
import type { V1ConfigMap, V1MutatingWebhookConfiguration, V1Namespace, V1Node } from '@kubernetes/client-node';
import type { KubeConfig } from '../kube/index.js';
import type { Registry } from 'prom-client';
import { type BackoffOptions, namespaceTarget, Reflector } from '../config/sources/kube/index.js';
import type { MeshConfig } from '../gen/mesh/v1alpha1/config_pb.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { InjectionOptions } from './handler.js';
import { INJECTOR_CONFIGMAP, InjectorSource } from './injector-source.js';
import { defaultMeshConfig, meshConfigFromYaml } from './mesh.js';
import { REVISION_LABEL } from '../config/constants.js';

export type NativeSidecarMode = 'true' | 'false' | 'auto';

export interface KubeInjectionInputsOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  /** The system namespace (POD_NAMESPACE, istio-system). */
  readonly namespace: string;
  /** istiod's revision ('' = default): ConfigMaps are `<name>-<revision>`. */
  readonly revision: string;
  /** istiod's ENABLE_NATIVE_SIDECARS (default auto). */
  readonly nativeSidecars: NativeSidecarMode;
  /** The `env` template function reads this (istiod's own environment). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** --meshConfig file text: when set it wins over the `istio` ConfigMap, as for discovery. */
  readonly meshConfigText?: string;
  readonly backoff?: BackoffOptions;
}

/** istiod's DetectNativeSidecar for kubelet versions (`v1.33.2`, `v1.34.0-gke.1`). */
export function nativeSidecarsFor(
  mode: NativeSidecarMode,
  nodes: readonly { name: string; kubeletVersion: string }[],
  nodeName: string,
): boolean {
  if (mode !== 'auto') return mode === 'true';
  const supports = (v: string): boolean => {
    const m = /^v?(\d+)\.(\d+)/.exec(v);
    return m !== null && Number(m[1]) >= 1 && (Number(m[1]) > 1 || Number(m[2]) >= 33);
  };
  if (nodeName !== '') {
    const node = nodes.find((n) => n.name === nodeName);
    if (node !== undefined) return supports(node.kubeletVersion);
  }
  return nodes.every((n) => supports(n.kubeletVersion));
}

export class KubeInjectionInputs {
  readonly #opts: KubeInjectionInputsOptions;
  readonly #source: InjectorSource;
  readonly #configMaps: Reflector<V1ConfigMap>;
  readonly #namespaces: Reflector<V1Namespace>;
  readonly #nodes: Reflector<V1Node> | undefined;
  readonly #tagWebhooks: Reflector<V1MutatingWebhookConfiguration>;
  readonly #injectorName: string;
  readonly #meshName: string;
  #mesh: MeshConfig = defaultMeshConfig();
  #lastInjector: string | undefined;
  #lastMesh: string | undefined;

  constructor(opts: KubeInjectionInputsOptions) {
    this.#opts = opts;
    this.#source = new InjectorSource(opts.env, opts.logger);
    const suffix = opts.revision === '' || opts.revision === 'default' ? '' : `-${opts.revision}`;
    this.#injectorName = `${INJECTOR_CONFIGMAP}${suffix}`;
    this.#meshName = `istio${suffix}`;
    if (opts.meshConfigText !== undefined) this.#mesh = meshConfigFromYaml(opts.meshConfigText, '--meshConfig');
    const backoff = opts.backoff ? { backoff: opts.backoff } : {};
    this.#configMaps = new Reflector<V1ConfigMap>({
      name: `configmaps/${opts.namespace} (injection)`,
      kubeConfig: opts.kubeConfig,
      targets: [{ path: `/api/v1/namespaces/${opts.namespace}/configmaps` }],
      logger: opts.logger,
      onBatch: () => this.#reload(),
      ...backoff,
    });
    this.#namespaces = new Reflector<V1Namespace>({
      name: 'namespaces (injection)',
      kubeConfig: opts.kubeConfig,
      targets: [namespaceTarget()],
      logger: opts.logger,
      onBatch: () => {},
      ...backoff,
    });
    this.#tagWebhooks = new Reflector<V1MutatingWebhookConfiguration>({
      name: 'mutatingwebhookconfigurations (revision tags)',
      kubeConfig: opts.kubeConfig,
      targets: [{ path: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations' }],
      logger: opts.logger,
      onBatch: () => {},
      ...backoff,
    });
    this.#nodes =
      opts.nativeSidecars === 'auto'
        ? new Reflector<V1Node>({
            name: 'nodes (injection)',
            kubeConfig: opts.kubeConfig,
            targets: [{ path: '/api/v1/nodes' }],
            logger: opts.logger,
            onBatch: () => {},
            ...backoff,
          })
        : undefined;
  }

  /** Resolves once ConfigMaps, Namespaces (and Nodes) are listed. */
  async start(): Promise<void> {
    await Promise.all([this.#configMaps.start(), this.#namespaces.start(), this.#tagWebhooks.start(), this.#nodes?.start()]);
    this.#reload();
  }

  async stop(): Promise<void> {
    await Promise.all([this.#configMaps.stop(), this.#namespaces.stop(), this.#tagWebhooks.stop(), this.#nodes?.stop()]);
  }

  /** The options of the /inject handler, reading the watched state on every request. */
  injectionOptions(
    extra: { readonly logger?: Logger; readonly compliancePolicy?: string; readonly registry?: Registry } = {},
  ): InjectionOptions {
    return {
      injector: () => this.#source.get(),
      meshConfig: () => this.#mesh,
      // A namespace not seen yet (created a moment ago) is left to the API server's own selectors.
      namespaceLabels: (ns) => {
        const found = this.#namespaces.list().find((n) => n.metadata?.name === ns);
        return found === undefined ? undefined : (found.metadata?.labels ?? {});
      },
      revision: this.#opts.revision === 'default' ? '' : this.#opts.revision,
      revisionTags: () => this.revisionTags(),
      nativeSidecars: (nodeName) =>
        nativeSidecarsFor(
          this.#opts.nativeSidecars,
          (this.#nodes?.list() ?? []).map((n) => ({
            name: n.metadata?.name ?? '',
            kubeletVersion: n.status?.nodeInfo?.kubeletVersion ?? '',
          })),
          nodeName,
        ),
      ...(extra.logger !== undefined ? { logger: extra.logger } : {}),
      ...(extra.compliancePolicy !== undefined ? { compliancePolicy: extra.compliancePolicy } : {}),
      ...(extra.registry !== undefined ? { registry: extra.registry } : {}),
    };
  }

  /** Tags whose webhook configuration names this revision (`istio.io/rev`), by `istio.io/tag`. */
  revisionTags(): string[] {
    const rev = this.#opts.revision === '' ? 'default' : this.#opts.revision;
    const tags = new Set<string>();
    for (const mwc of this.#tagWebhooks.list()) {
      const labels = mwc.metadata?.labels ?? {};
      const tag = labels['istio.io/tag'];
      if (tag !== undefined && tag !== '' && labels[REVISION_LABEL] === rev) tags.add(tag);
    }
    return [...tags].sort();
  }

  #reload(): void {
    const ns = this.#opts.namespace;
    const injector = this.#configMaps.list().find((c) => c.metadata?.name === this.#injectorName);
    const injectorKey = injector === undefined ? '' : JSON.stringify(injector.data ?? {});
    if (injectorKey !== this.#lastInjector) {
      this.#lastInjector = injectorKey;
      this.#source.update(injector === undefined ? undefined : (injector.data ?? {}), `ConfigMap ${ns}/${this.#injectorName}`);
    }
    if (this.#opts.meshConfigText !== undefined) return;
    const mesh = this.#configMaps.list().find((c) => c.metadata?.name === this.#meshName);
    const meshText = mesh?.data?.mesh ?? '';
    if (meshText === this.#lastMesh) return;
    this.#lastMesh = meshText;
    try {
      this.#mesh = meshConfigFromYaml(meshText, `ConfigMap ${ns}/${this.#meshName} key mesh`);
    } catch (err) {
      this.#opts.logger.error('inject: invalid mesh config; keeping the previous one', { error: errorMessage(err) });
    }
  }
}
