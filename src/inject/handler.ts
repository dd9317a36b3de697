/**
 * The `/inject` AdmissionHandler. Like istiod's Webhook.inject: CREATE of a Pod
 * only; a pod the policy skips is allowed unchanged; an injected pod is allowed with a JSONPatch;
 * a failure (bad annotation, template error) is answered `allowed: false` with the message, as
 * istiod's toAdmissionResponse does — with Istio's `failurePolicy: Fail` the pod is then refused,
 * rather than started without its sidecar.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { MeshConfig } from '../gen/mesh/v1alpha1/config_pb.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { AdmissionRequest, AdmissionResponse } from '../webhooks/index.js';
import type { InjectorSnapshot } from './injector-source.js';
import { injectPod, type InjectionConfig } from './inject.js';
import type { ProxyConfigSource } from './proxy-config.js';
import type { JsonObject } from './render.js';

export interface InjectionOptions {
  /** The injector's current templates, values and policy (from the ConfigMap, or Istio's defaults). */
  readonly injector: () => InjectorSnapshot;
  /** The current mesh config (the `istio` ConfigMap's `mesh` key over istiod's defaults). */
  readonly meshConfig: () => MeshConfig;
  /**
   * Labels of a namespace, for the webhook's namespace selectors (undefined: not known, so the
   * pod is judged by istiod's policy alone). Called only for Pod CREATE requests.
   */
  readonly namespaceLabels?: (
    namespace: string,
  ) => Readonly<Record<string, string>> | undefined | Promise<Readonly<Record<string, string>> | undefined>;
  /** The revision served ('' = default). */
  readonly revision?: string;
  /** Revision tags pointing at this revision (from the `istio.io/tag`-labelled webhook configurations). */
  readonly revisionTags?: () => readonly string[];
  /** Whether to render native sidecars for a pod bound for `nodeName` ('' when unscheduled). */
  readonly nativeSidecars?: (nodeName: string) => boolean | Promise<boolean>;
  readonly compliancePolicy?: string;
  readonly logger?: Logger;
  /** Where istiod's sidecar_injection_* metrics go (none: not counted). */
  readonly registry?: Registry;
  /** ProxyConfig resources (from the config store) resolved per pod as istiod's injector does. */
  readonly proxyConfigs?: () => ProxyConfigSource;
}

interface InjectionMetrics {
  request(): void;
  success(): void;
  skip(): void;
  failure(): void;
  time(seconds: number): void;
}

/** istiod's injector metrics (pkg/kube/inject/monitoring.go), one set per registry. */
function injectionMetrics(registry: Registry | undefined): InjectionMetrics {
  if (!registry) return { request: () => {}, success: () => {}, skip: () => {}, failure: () => {}, time: () => {} };
  const registers = [registry];
  const counter = (name: string, help: string): Counter =>
    (registry.getSingleMetric(name) as Counter | undefined) ?? new Counter({ name, help, registers });
  const requests = counter('sidecar_injection_requests_total', 'Total number of sidecar injection requests.');
  const success = counter('sidecar_injection_success_total', 'Total number of successful sidecar injection requests.');
  const failure = counter('sidecar_injection_failure_total', 'Total number of failed sidecar injection requests.');
  const skip = counter('sidecar_injection_skip_total', 'Total number of skipped sidecar injection requests.');
  const time =
    (registry.getSingleMetric('sidecar_injection_time_seconds') as Histogram | undefined) ??
    new Histogram({
      name: 'sidecar_injection_time_seconds',
      help: 'Total time taken for injection in seconds.',
      buckets: [0.1, 1, 3, 5, 10, 20, 30, 60],
      registers,
    });
  return {
    request: () => requests.inc(),
    success: () => success.inc(),
    skip: () => skip.inc(),
    failure: () => failure.inc(),
    time: (s) => time.observe(s),
  };
}

/** istiod's parseInjectEnvs: `/inject/cluster/c1/net/n1` or `/inject/:ENV:cluster=c1:ENV:net=n1`. */
export function injectEnvsFromPath(path: string): Record<string, string> {
  const trimmed = path.endsWith('/') ? path.slice(0, -1) : path;
  const parts = trimmed.split('/');
  // '', 'inject', rest…
  const rest = parts.length >= 3 ? parts.slice(2).join('/') : '';
  let kv: string[] = [];
  if (rest.startsWith(':ENV:')) {
    for (const pair of rest.split(':ENV:').slice(1)) {
      const eq = pair.indexOf('=');
      if (eq > 0) kv.push(pair.slice(0, eq), pair.slice(eq + 1));
    }
  } else if (rest !== '') {
    kv = rest.split('/').map((v, i) => (i % 2 === 1 ? v.replaceAll('--slash--', '/') : v));
  }
  const out: Record<string, string> = {};
  const known: Record<string, string> = { cluster: 'ISTIO_META_CLUSTER_ID', net: 'ISTIO_META_NETWORK' };
  for (let i = 0; i + 1 < kv.length; i += 2) {
    const k = kv[i] ?? '';
    const env = known[k] ?? k.toUpperCase();
    if (env !== '') out[env] = kv[i + 1] ?? '';
  }
  return out;
}

function isPod(req: AdmissionRequest): boolean {
  return req.kind.group === '' && req.kind.kind === 'Pod' && req.resource.resource === 'pods' && (req.subResource ?? '') === '';
}

/** The handler; `path` (the request path, for /inject/:ENV… parameters) is optional. */
export function injectionHandler(opts: InjectionOptions): (req: AdmissionRequest, path?: string) => Promise<AdmissionResponse> {
  const log = opts.logger;
  const metrics = injectionMetrics(opts.registry);
  const handle = injectOne(opts, log);
  return async (req: AdmissionRequest, path = '/inject'): Promise<AdmissionResponse> => {
    // As istiod's serveInject: every request counts, and "success" counts every answer written —
    // skips and refusals included (a refusal also counts as a failure).
    metrics.request();
    const start = performance.now();
    const res = await handle(req, path, metrics);
    metrics.time((performance.now() - start) / 1000);
    metrics.success();
    return res;
  };
}

function injectOne(
  opts: InjectionOptions,
  log: Logger | undefined,
): (req: AdmissionRequest, path: string, metrics: InjectionMetrics) => Promise<AdmissionResponse> {
  return async (req, path, metrics) => {
    if (req.operation !== 'CREATE' || !isPod(req)) return { uid: req.uid, allowed: true };
    const pod = req.object;
    if (typeof pod !== 'object' || pod === null || Array.isArray(pod)) {
      metrics.failure();
      return {
        uid: req.uid,
        allowed: false,
        status: { code: 400, message: 'could not decode the Pod: request.object is not a JSON object' },
      };
    }
    const podJson = pod as JsonObject;
    const meta = (podJson.metadata ?? {}) as JsonObject;
    const namespace = typeof meta.namespace === 'string' && meta.namespace !== '' ? meta.namespace : (req.namespace ?? '');
    const podName =
      typeof meta.name === 'string' && meta.name !== ''
        ? meta.name
        : `${typeof meta.generateName === 'string' ? meta.generateName : ''}***** (actual name not yet known)`;
    try {
      const snapshot = opts.injector();
      const namespaceLabels = opts.namespaceLabels === undefined ? undefined : await opts.namespaceLabels(namespace);
      const spec = (podJson.spec ?? {}) as JsonObject;
      const nodeName = typeof spec.nodeName === 'string' ? spec.nodeName : '';
      const config: InjectionConfig = {
        ...snapshot,
        mesh: opts.meshConfig(),
        revision: opts.revision ?? '',
        revisionTags: opts.revisionTags?.() ?? [],
        nativeSidecars: opts.nativeSidecars === undefined ? false : await opts.nativeSidecars(nodeName),
        ...(opts.compliancePolicy !== undefined ? { compliancePolicy: opts.compliancePolicy } : {}),
        ...(namespaceLabels !== undefined ? { namespaceLabels } : {}),
        proxyEnvs: injectEnvsFromPath(path),
        ...(opts.proxyConfigs ? { proxyConfigs: opts.proxyConfigs() } : {}),
      };
      const result = injectPod(podJson, namespace, config);
      if ('skipped' in result) {
        log?.info(`inject: skipping pod ${namespace}/${podName}: ${result.skipped}`);
        metrics.skip();
        return { uid: req.uid, allowed: true };
      }
      log?.info(`inject: injecting pod ${namespace}/${podName} (${result.reason}): ${result.patch.length} patch operations`);
      return { uid: req.uid, allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(result.patch)).toString('base64') };
    } catch (err) {
      const message = errorMessage(err);
      log?.error(`inject: pod ${namespace}/${podName}: Pod injection failed: ${message}`);
      metrics.failure();
      return { uid: req.uid, allowed: false, status: { message } };
    }
  };
}
