/**
 * istiod's gateway deployment controller on a cluster: for every Gateway of a class this control
 * plane owns (`istio`, or a GatewayClass naming istio.io/gateway-controller; with ambient
 * waypoints also `istio-waypoint`, or a class naming istio.io/mesh-controller) without a hostname
 * address, server-side apply the `<gateway>-<class>` Deployment, Service and ServiceAccount (plus
 * HPA/PDB when a ConfigMap customises them; a waypoint's are named `<gateway>` and rendered from
 * the `waypoint` template) rendered by src/gateway-deploy/render.ts, with the class's controller
 * as field manager. The objects carry an ownerReference to the Gateway, so the
 * API server's garbage collector removes them with it; nothing is deleted here.
 *
 * Reconciled when a Gateway appears or changes (generation, labels, annotations), when a
 * GatewayClass changes, and when an object we manage changes or disappears (a deleted Deployment
 * comes back). An object of the same name that we do not manage (no gateway.istio.io/managed
 * label) is left alone, as istiod does. Failed applies retry with backoff; a render error is logged
 * and waits for the inputs to change.
 *
 * Runs as a singleton task (the leader only): `(signal) => Promise<void>`.
 */
import {
  customResourceTargets,
  ReconcileQueue,
  Reflector,
  startUntilAborted,
  type BackoffOptions,
  type CustomObject,
  type ReflectorEvent,
  type ReflectorTarget,
} from '../config/sources/kube/index.js';
import type { MeshConfig } from '../gen/mesh/v1alpha1/config_pb.js';
import type { ProxyConfig } from '../gen/mesh/v1alpha1/proxy_pb.js';
import type { InjectorSnapshot } from '../inject/index.js';
import { KubeApiError, kubeClient, objectPath, type KubeClient, type KubeConfig } from '../kube/index.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { rec, strings } from './json.js';
import type { GatewayDeployOptions } from './options.js';
import {
  classInfo,
  controllerOf,
  controllerVersionDecision,
  controllerVersionPatch,
  isManaged,
  MANAGED_LABEL,
  renderGateway,
} from './render.js';
import { GATEWAY_API_GROUP, GATEWAY_NAME_LABEL } from '../config/constants.js';

/** The label a ConfigMap in the system namespace carries to customise every Gateway of a class. */
export const CLASS_DEFAULTS_LABEL = 'gateway.istio.io/defaults-for-class';

export interface GatewayDeployerOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  readonly options: GatewayDeployOptions;
  /** Where class-default ConfigMaps live (istiod's system namespace). */
  readonly systemNamespace: string;
  /** The injector's current templates and values (the `istio-sidecar-injector` ConfigMap). */
  readonly injector: () => InjectorSnapshot;
  readonly mesh: () => MeshConfig;
  /** The ProxyConfig in effect for a gateway's pods (namespace, pod labels). */
  readonly proxyConfig: (namespace: string, labels: Readonly<Record<string, string>>) => ProxyConfig;
  readonly backoff?: BackoffOptions;
}

export interface GatewayDeployerStats {
  readonly reconciled: number;
  readonly applied: number;
  readonly failed: number;
}

type Obj = CustomObject & {
  readonly metadata?: {
    readonly labels?: Readonly<Record<string, string>>;
    readonly ownerReferences?: ReadonlyArray<{ readonly kind?: string; readonly name?: string }>;
  };
};

function keyOf(namespace: string | undefined, name: string | undefined): string | undefined {
  return namespace && name ? `${namespace}/${name}` : undefined;
}

export function gatewayDeployerTask(opts: GatewayDeployerOptions): (signal: AbortSignal) => Promise<void> {
  return (signal) => new GatewayDeployer(opts).run(signal);
}

export class GatewayDeployer {
  readonly #opts: GatewayDeployerOptions;
  readonly #log: Logger;
  readonly #rest: KubeClient;
  readonly #gateways: Reflector<CustomObject>;
  readonly #classes: Reflector<CustomObject>;
  readonly #owned: Reflector<Obj>[];
  readonly #queue: ReconcileQueue;
  readonly #stats = { reconciled: 0, applied: 0, failed: 0 };
  #kubeVersion: number | undefined;

  constructor(opts: GatewayDeployerOptions) {
    this.#opts = opts;
    this.#log = opts.logger;
    this.#rest = kubeClient(opts.kubeConfig);
    this.#queue = new ReconcileQueue((key) => this.#reconcile(key), { initialMs: 200, maxMs: 60_000, ...opts.backoff });
    const backoff = opts.backoff ? { backoff: opts.backoff } : {};
    const kc = opts.kubeConfig;
    this.#gateways = new Reflector<CustomObject>({
      name: `gateways.${GATEWAY_API_GROUP} (deployment controller)`,
      kubeConfig: kc,
      targets: customResourceTargets(GATEWAY_API_GROUP, ['v1'], 'gateways'),
      logger: opts.logger,
      onBatch: (events) => events.forEach((e) => this.#onGateway(e)),
      ...backoff,
    });
    this.#classes = new Reflector<CustomObject>({
      name: `gatewayclasses.${GATEWAY_API_GROUP} (deployment controller)`,
      kubeConfig: kc,
      targets: customResourceTargets(GATEWAY_API_GROUP, ['v1'], 'gatewayclasses'),
      logger: opts.logger,
      onBatch: (events) => events.forEach((e) => this.#enqueueClass(String(rec(e.object.metadata).name ?? ''))),
      ...backoff,
    });
    // What we manage, found by our label: a change or deletion re-renders its Gateway.
    const selector = MANAGED_LABEL;
    const owned: Array<[string, ReflectorTarget<Obj>]> = [
      ['deployments', { path: `/apis/apps/v1/deployments?labelSelector=${selector}` }],
      ['services', { path: `/api/v1/services?labelSelector=${selector}` }],
      ['serviceaccounts', { path: `/api/v1/serviceaccounts?labelSelector=${selector}` }],
    ];
    this.#owned = owned.map(
      ([name, target]) =>
        new Reflector<Obj>({
          name: `${name} (gateway deployment controller)`,
          kubeConfig: kc,
          targets: [target],
          logger: opts.logger,
          onBatch: (events) => events.forEach((e) => this.#onOwned(e)),
          ...backoff,
        }),
    );
  }

  stats(): GatewayDeployerStats {
    return { ...this.#stats };
  }

  async run(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    try {
      // As istiod's WaitForCacheSync: no write before the caches hold what exists.
      // (Gateway API CRDs not installed yet: the wait lasts until they are, or until we stop leading.)
      await startUntilAborted([this.#gateways, this.#classes, ...this.#owned], signal);
      if (signal.aborted) return;
      for (const g of this.#gateways.list()) this.#enqueue(keyOf(g.metadata?.namespace, g.metadata?.name));
      this.#log.info('gateway deployment controller started', { gateways: this.#gateways.list().length });
      await this.#queue.run(signal);
    } finally {
      await Promise.all([this.#gateways.stop(), this.#classes.stop(), ...this.#owned.map((r) => r.stop())]);
    }
  }

  /** istiod requeues on add, delete, and on updates that change generation, labels or annotations (not status). */
  #onGateway(e: ReflectorEvent<CustomObject>): void {
    if (e.type === 'update') {
      const a = rec(e.old.metadata);
      const b = rec(e.object.metadata);
      const same =
        a.generation === b.generation &&
        JSON.stringify(a.labels ?? {}) === JSON.stringify(b.labels ?? {}) &&
        JSON.stringify(a.annotations ?? {}) === JSON.stringify(b.annotations ?? {});
      if (same) return;
    }
    this.#enqueue(keyOf(e.object.metadata?.namespace, e.object.metadata?.name));
  }

  #onOwned(e: ReflectorEvent<Obj>): void {
    const owner = (e.object.metadata?.ownerReferences ?? []).find((o) => o.kind === 'Gateway');
    this.#enqueue(keyOf(e.object.metadata?.namespace, owner?.name));
  }

  #enqueueClass(className: string): void {
    for (const g of this.#gateways.list())
      if (rec(g.spec).gatewayClassName === className) this.#enqueue(keyOf(g.metadata?.namespace, g.metadata?.name));
  }

  #enqueue(key: string | undefined): void {
    this.#queue.add(key);
  }

  /** Brings one Gateway's objects in line; false: try again later. */
  async #reconcile(key: string): Promise<boolean> {
    const [namespace = '', name = ''] = key.split('/');
    const gateway = this.#gateways.get(namespace, name);
    if (gateway === undefined) return true; // gone: the garbage collector follows the ownerReferences
    const o = this.#opts.options;
    const classes = new Map(this.#classes.list().map((c) => [String(rec(c.metadata).name ?? ''), c as Record<string, unknown>]));
    const controller = controllerOf(gateway, classes, o);
    const cls = classInfo(controller, o);
    if (cls === undefined || !isManaged(gateway, o)) return true;
    const version = controllerVersionDecision(gateway);
    if (!version.manage) {
      this.#log.debug('gateway is managed by a newer controller version; skipping', { gateway: key });
      return true;
    }
    this.#stats.reconciled++;
    try {
      // istiod writes this through /status, where the API server drops metadata changes of a custom
      // resource (so istiod rewrites it on every reconcile); written on the Gateway it persists.
      if (version.writeVersion)
        await this.#apply(`/apis/${GATEWAY_API_GROUP}/v1/namespaces/${namespace}/gateways/${name}`, controllerVersionPatch());
      const overlays = await this.#overlays(gateway);
      let rendered;
      try {
        if (typeof overlays === 'string') throw new Error(overlays);
        rendered = renderGateway({
          gateway,
          controllerName: cls.controller,
          injector: this.#opts.injector(),
          mesh: this.#opts.mesh(),
          proxyConfig: this.#opts.proxyConfig(namespace, { [GATEWAY_NAME_LABEL]: name }),
          kubeVersion: await this.#serverVersion(),
          overlays,
          options: o,
        });
      } catch (err) {
        // Not transient (istiod does not retry either): wait for the Gateway, class or ConfigMaps to change.
        this.#log.error('gateway deployment: cannot render', { gateway: key, error: errorMessage(err) });
        return true;
      }
      for (const object of rendered.objects) {
        const meta = rec(object.metadata);
        const info = await this.#rest.resolve(String(object.apiVersion), String(object.kind));
        if (info === undefined) throw new Error(`${String(object.apiVersion)} ${String(object.kind)} is not served`);
        const path = objectPath(info, String(meta.name), namespace);
        const existing = await this.#rest.getOrUndefined(path);
        if (existing !== undefined && existing.metadata?.labels?.[MANAGED_LABEL] === undefined) {
          this.#log.debug('gateway deployment: object exists and is not ours; left alone', {
            gateway: key,
            kind: object.kind,
            name: meta.name,
          });
          continue;
        }
        await this.#apply(
          path,
          existing?.metadata?.resourceVersion
            ? { ...object, metadata: { ...meta, resourceVersion: existing.metadata.resourceVersion } }
            : object,
          cls.controller,
        );
        this.#stats.applied++;
      }
      this.#log.info('gateway deployment updated', {
        gateway: key,
        deployment: rendered.deploymentName,
        objects: rendered.objects.map((x) => `${String(x.kind)}/${String(rec(x.metadata).name)}`),
      });
      return true;
    } catch (err) {
      this.#stats.failed++;
      // 409: our resourceVersion was stale; the watch brings the current object.
      const level = err instanceof KubeApiError && err.status === 409 ? 'debug' : 'warn';
      this.#log[level]('gateway deployment: apply failed; retrying', { gateway: key, error: errorMessage(err) });
      return false;
    }
  }

  /** Server-side apply as `fieldManager` (istiod applies a class's objects as its controller). */
  #apply(path: string, body: unknown, fieldManager: string = this.#opts.options.controllerName): Promise<unknown> {
    return this.#rest.call(
      'PATCH',
      `${path}?fieldManager=${encodeURIComponent(fieldManager)}&force=true`,
      body,
      'application/apply-patch+yaml',
    );
  }

  /** The API server's version as istiod's GetVersionAsInt (1.28 → 128), asked once. */
  async #serverVersion(): Promise<number> {
    if (this.#kubeVersion === undefined) {
      const v = rec(await this.#rest.call('GET', '/version'));
      const minor = Number.parseInt(String(v.minor ?? ''), 10);
      const major = Number.parseInt(String(v.major ?? ''), 10);
      this.#kubeVersion = Number.isFinite(major) && Number.isFinite(minor) ? major * 100 + minor : 0;
    }
    return this.#kubeVersion;
  }

  /**
   * Class defaults (the oldest labelled ConfigMap in the system namespace), then the Gateway's
   * parametersRef; a string says why the Gateway's parameters are unusable.
   */
  async #overlays(gateway: Record<string, unknown>): Promise<Array<Record<string, string>> | string> {
    const out: Array<Record<string, string>> = [];
    const className = String(rec(gateway.spec).gatewayClassName ?? '');
    const selector = encodeURIComponent(`${CLASS_DEFAULTS_LABEL}=${className}`);
    const list = rec(await this.#rest.call('GET', `/api/v1/namespaces/${this.#opts.systemNamespace}/configmaps?labelSelector=${selector}`));
    const items = (Array.isArray(list.items) ? list.items : []).map(rec);
    items.sort((a, b) => String(rec(a.metadata).creationTimestamp ?? '').localeCompare(String(rec(b.metadata).creationTimestamp ?? '')));
    const oldest = items[0];
    if (oldest !== undefined) out.push(strings(oldest.data));
    const ref = rec(rec(rec(gateway.spec).infrastructure).parametersRef);
    if (Object.keys(ref).length > 0) {
      if (ref.kind !== 'ConfigMap' || (ref.group ?? '') !== '')
        return `invalid parameters: unknown infrastructure parameters type ${String(ref.group ?? '')}/${String(ref.kind ?? '')}`;
      const namespace = String(rec(gateway.metadata).namespace ?? '');
      const cm = await this.#rest.getOrUndefined(`/api/v1/namespaces/${namespace}/configmaps/${String(ref.name ?? '')}`);
      if (cm === undefined)
        return `parametersRef targeting configmap "${namespace}/${String(ref.name ?? '')}", but configmap does not exist`;
      out.push(strings(rec(cm).data));
    }
    return out;
  }
}
