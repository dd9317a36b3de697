/**
 * caBundle upkeep of the webhook configurations (istiod's validation webhook controller and its
 * "webhook cert patcher"): the API server verifies meshpilot's serving certificate against each
 * webhook's `clientConfig.caBundle`, so that must be the CA's trust bundle. Installs ship it empty
 * ("patched at runtime when the webhook is ready"); it is written when meshpilot starts, again when
 * someone changes it (the configurations are watched), and when the roots rotate.
 *
 * Which configurations are ours, as istiod: those labelled `istio.io/rev=<revision>` (Istio's chart
 * labels `istio-validator-istio-system` and `istio-sidecar-injector` so). In a ValidatingWebhook-
 * Configuration every webhook is patched; in a MutatingWebhookConfiguration the webhooks whose name
 * ends in `sidecar-injector.istio.io`. A configuration with another revision's label is left
 * alone. Beyond istiod: one without any `istio.io/rev` label is ours too when its name is exactly
 * the configured one (INJECTION_WEBHOOK_CONFIG_NAME / VALIDATION_WEBHOOK_CONFIG_NAME), so a
 * hand-written configuration with the chart's name works without the label.
 *
 * A patch is a JSON Patch guarded by a `test` of the resourceVersion it was computed from, so a
 * concurrent edit makes it fail instead of patching the wrong webhook; failures retry with backoff
 * (100 ms doubling to 1 min, forever, as istiod's queue), and every watch event re-checks at once. This runs as a singleton task (one replica patches: the holder of the
 * `istio-leader` Lease, src/bootstrap/singletons.ts): `(signal) => Promise<void>`, resolving once stopped.
 */
import { kubeClient, type KubeConfig } from '../kube/index.js';
import { Backoff, Reflector, statusCodeOf, type BackoffOptions } from '../config/sources/kube/index.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { REVISION_LABEL } from '../config/constants.js';
import type { JsonPatchOp } from '../util/json-patch.js';

/** istiod patches the mutating webhooks whose name ends so (`sidecar-injector.istio.io`, `rev.namespace.sidecar-injector.istio.io` …). */
export const INJECTION_WEBHOOK_SUFFIX = 'sidecar-injector.istio.io';

/** The parts of a (Validating|Mutating)WebhookConfiguration read here. */
export interface WebhookConfiguration {
  readonly metadata?: { readonly name?: string; readonly resourceVersion?: string; readonly labels?: Readonly<Record<string, string>> };
  readonly webhooks?: readonly {
    readonly name?: string;
    readonly clientConfig?: { readonly caBundle?: string };
    readonly failurePolicy?: string;
  }[];
}

export type WebhookConfigurationKind = 'ValidatingWebhookConfiguration' | 'MutatingWebhookConfiguration';

export interface CaBundleTarget {
  readonly kind: WebhookConfigurationKind;
  /** The name that is ours even without a revision label. */
  readonly name: string;
  /** Which webhooks of a configuration to patch (undefined: all of them). */
  readonly webhookSuffix?: string;
  /**
   * istiod's validation controller: webhooks installed fail-open (failurePolicy Ignore, as Istio's
   * chart ships the validator) are switched to Fail once the readiness probe shows the webhook
   * refusing invalid config. Never switched back.
   */
  readonly failClosedWhenReady?: boolean;
}

/** Whether the webhook is known to refuse invalid config through the API server (istiod: a dry-run invalid Gateway). */
export type FailCloseProbe = () => Promise<{ readonly ready: boolean; readonly reason: string }>;

export interface CaBundlePatcherOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  /** istiod's REVISION (`default` when unset). */
  readonly revision: string;
  readonly targets: readonly CaBundleTarget[];
  /** The CA's trust bundle, PEM. */
  readonly caBundlePem: () => string;
  /** Subscribes to trust bundle changes (root rotation); returns the unsubscribe. */
  readonly onCaBundleChange: (listener: () => void) => () => void;
  /** Needed by targets with failClosedWhenReady; polled every second until it says ready. */
  readonly failCloseProbe?: FailCloseProbe;
  readonly backoff?: BackoffOptions;
}

/** Is this configuration ours to patch? */
export function isOurs(config: WebhookConfiguration, target: CaBundleTarget, revision: string): boolean {
  const rev = config.metadata?.labels?.[REVISION_LABEL];
  return rev !== undefined ? rev === revision : config.metadata?.name === target.name;
}

const targeted = (target: CaBundleTarget, name: string | undefined): boolean =>
  target.webhookSuffix === undefined || (name ?? '').endsWith(target.webhookSuffix);

/** Does one of the target's webhooks still fail open (a failurePolicy other than Fail)? */
export function failsOpen(config: WebhookConfiguration, target: CaBundleTarget): boolean {
  return (config.webhooks ?? []).some((wh) => targeted(target, wh.name) && wh.failurePolicy !== undefined && wh.failurePolicy !== 'Fail');
}

/**
 * The JSON Patch that sets caBundle (base64 of the PEM, as the API carries bytes) on the target's
 * webhooks — and with `failClosed` their failurePolicy to Fail — guarded by the resourceVersion;
 * empty when nothing needs to change.
 */
export function caBundlePatch(
  config: WebhookConfiguration,
  target: CaBundleTarget,
  caBundleBase64: string,
  failClosed = false,
): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  (config.webhooks ?? []).forEach((wh, i) => {
    if (!targeted(target, wh.name)) return;
    // `add` sets an object member whether it exists or not; clientConfig itself is required by the API.
    if (wh.clientConfig?.caBundle !== caBundleBase64)
      ops.push({ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: caBundleBase64 });
    if (failClosed && wh.failurePolicy !== undefined && wh.failurePolicy !== 'Fail')
      ops.push({ op: 'add', path: `/webhooks/${i}/failurePolicy`, value: 'Fail' });
  });
  if (ops.length === 0) return ops;
  return [{ op: 'test', path: '/metadata/resourceVersion', value: config.metadata?.resourceVersion ?? '' }, ...ops];
}

interface Watched {
  readonly target: CaBundleTarget;
  readonly reflector: Reflector<WebhookConfiguration>;
  readonly patch: (name: string, ops: JsonPatchOp[]) => Promise<unknown>;
}

/** The singleton task: patches until `signal` aborts. */
export function webhookCaBundleTask(opts: CaBundlePatcherOptions): (signal: AbortSignal) => Promise<void> {
  return (signal) => new CaBundlePatcher(opts).run(signal);
}

class CaBundlePatcher {
  readonly #opts: CaBundlePatcherOptions;
  readonly #log: Logger;
  readonly #watched: Watched[];
  readonly #backoff: Backoff;
  #running: Promise<void> | undefined;
  #again = false;
  #retry: NodeJS.Timeout | undefined;
  #stopped = false;
  /** The fail-close probe succeeded once (istiod: dryRunOfInvalidConfigRejected). */
  #readyForFailClose = false;
  #probeLogged = false;

  constructor(opts: CaBundlePatcherOptions) {
    this.#opts = opts;
    this.#log = opts.logger;
    this.#backoff = new Backoff(opts.backoff ?? { initialMs: 100, maxMs: 60_000 });
    const api = kubeClient(opts.kubeConfig);
    this.#watched = opts.targets.map((target) => {
      const plural = target.kind === 'ValidatingWebhookConfiguration' ? 'validatingwebhookconfigurations' : 'mutatingwebhookconfigurations';
      const path = `/apis/admissionregistration.k8s.io/v1/${plural}`;
      return {
        target,
        reflector: new Reflector<WebhookConfiguration>({
          name: `${plural}.admissionregistration.k8s.io`,
          kubeConfig: opts.kubeConfig,
          // Few objects cluster-wide: watch them all and pick ours here (as istiod's patcher does).
          targets: [{ path }],
          logger: opts.logger,
          onBatch: () => this.#kick(),
        }),
        patch: (name, ops) => api.patch(`${path}/${encodeURIComponent(name)}`, 'json', ops),
      };
    });
  }

  async run(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    const unsubscribe = this.#opts.onCaBundleChange(() => {
      this.#log.info('trust bundle changed: patching the webhook configurations');
      this.#kick();
    });
    const stopped = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    this.#log.info('webhook caBundle patcher started', {
      revision: this.#opts.revision,
      targets: this.#opts.targets.map((t) => `${t.kind} ${t.name}`),
    });
    await Promise.race([Promise.all(this.#watched.map((w) => w.reflector.start())), stopped]);
    this.#kick();
    await stopped;
    this.#stopped = true;
    unsubscribe();
    if (this.#retry) clearTimeout(this.#retry);
    await Promise.all(this.#watched.map((w) => w.reflector.stop()));
    await this.#running;
  }

  /** Reconciles now, or once more after the pass in progress. */
  #kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = undefined;
    this.#running = this.#reconcileAll().finally(() => {
      this.#running = undefined;
      if (this.#again) {
        this.#again = false;
        this.#kick();
      }
    });
  }

  async #reconcileAll(): Promise<void> {
    const caBundle = Buffer.from(this.#opts.caBundlePem()).toString('base64');
    let failed = false;
    for (const w of this.#watched) {
      if (!w.reflector.synced) continue;
      for (const config of w.reflector.list()) {
        if (this.#stopped) return;
        if (!isOurs(config, w.target, this.#opts.revision)) continue;
        const ops = caBundlePatch(config, w.target, caBundle, w.target.failClosedWhenReady === true && this.#readyForFailClose);
        const name = config.metadata?.name ?? '';
        if (ops.length === 0) continue;
        try {
          await w.patch(name, ops);
          this.#log.info('patched webhook configuration', { kind: w.target.kind, name, fields: ops.slice(1).map((o) => o.path) });
        } catch (err) {
          const status = statusCodeOf(err);
          if (status === 404) continue; // deleted meanwhile: nothing to keep up
          failed = true;
          // 409/422: changed under us (the resourceVersion test failed); the retry reads the newer version.
          const raced = status === 409 || status === 422;
          (raced ? this.#log.debug : this.#log.warn)('patching caBundle failed; retrying', {
            kind: w.target.kind,
            name,
            status,
            error: errorMessage(err),
          });
        }
      }
    }
    if (!failed) this.#backoff.reset();
    const probeAgain = !this.#stopped && (await this.#probeFailClose());
    if (this.#stopped) return;
    if (this.#readyForFailClose && this.#failOpenRemains()) this.#again = true; // switch them now
    if (failed) this.#scheduleRetry(this.#backoff.next());
    else if (probeAgain) this.#scheduleRetry(1000);
  }

  #failOpenRemains(): boolean {
    return this.#watched.some(
      (w) =>
        w.target.failClosedWhenReady === true &&
        w.reflector.list().some((c) => isOurs(c, w.target, this.#opts.revision) && failsOpen(c, w.target)),
    );
  }

  /** Runs the probe while one of ours fails open and it has not succeeded yet; true: try again later. */
  async #probeFailClose(): Promise<boolean> {
    const probe = this.#opts.failCloseProbe;
    if (this.#readyForFailClose || !probe || !this.#failOpenRemains()) return false;
    let result: { ready: boolean; reason: string };
    try {
      result = await probe();
    } catch (err) {
      result = { ready: false, reason: errorMessage(err) };
    }
    if (result.ready) {
      this.#readyForFailClose = true;
      this.#log.info('endpoint rejected invalid config: switching validation to fail-close', { reason: result.reason });
      return false;
    }
    // istiod logs this on every try; once at info is enough, the rest at debug.
    if (this.#probeLogged) this.#log.debug('not ready to switch validation to fail-close', { reason: result.reason });
    else this.#log.info('not ready to switch validation to fail-close', { reason: result.reason });
    this.#probeLogged = true;
    return true;
  }

  #scheduleRetry(ms: number): void {
    if (this.#stopped) return;
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = setTimeout(() => this.#kick(), ms);
    this.#retry.unref();
  }
}
