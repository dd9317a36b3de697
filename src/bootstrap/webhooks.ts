/**
 * The webhooks side of `meshpilot discovery`: the HTTPS admission server on --httpsAddr, presenting
 * the secure gRPC server's serving certificate (istiod serves 15012 and 15017 with the same one,
 * renewed in one place), /validate, /inject (sidecar injection, src/inject, with its inputs watched
 * from the cluster), and the caBundle patcher as a singleton task.
 */
import { readFile } from 'node:fs/promises';
import type { Registry } from 'prom-client';
import { injectionHandler, proxyConfigFor, type ProxyConfigSource } from '../inject/index.js';
import type { KubeInjectionInputs } from '../inject/kube-inputs.js';
import type { KeyCert, RunningSecureGrpc } from '../security/index.js';
import { MeshError, errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { CaBundleTarget } from '../webhooks/ca-bundle-patcher.js';
import { WebhookServer, type PathAdmissionHandler, type WebhookHandlers, validationHandler } from '../webhooks/index.js';
import type { KubeCluster } from './kube-side.js';
import { parseListenAddress, type DiscoveryOptions } from './options.js';

/** Work that one replica does (run by the leader of the Lease, src/bootstrap/singletons.ts). */
export interface SingletonTask {
  readonly name: string;
  readonly run: (signal: AbortSignal) => Promise<void>;
}

export interface RunningWebhooks {
  /** `host:port` of the HTTPS server. */
  readonly address: string;
  /** The caBundle patcher, when a cluster is configured. */
  readonly singletonTasks: readonly SingletonTask[];
  stop(): Promise<void>;
}

/** Starts the HTTPS server (undefined when --httpsAddr is ''). */
export async function startWebhooks(
  opts: DiscoveryOptions,
  secure: RunningSecureGrpc,
  cluster: KubeCluster | undefined,
  registry: Registry,
  log: Logger,
  proxyConfigs?: () => ProxyConfigSource,
): Promise<RunningWebhooks | undefined> {
  const wopts = opts.webhooks;
  if (wopts.httpsAddr === '') return undefined;
  const listen = parseListenAddress(wopts.httpsAddr, '--httpsAddr');
  const wlog = log.child('webhooks');
  const injection = await startInjection(opts, cluster, wlog.child('inject'), registry, proxyConfigs);
  const handlers: WebhookHandlers = {
    validate: validationHandler({ logger: wlog.child('validation'), registry }),
    ...(injection.handler ? { inject: injection.handler } : {}),
    ...(injection.unavailable !== undefined ? { injectUnavailable: injection.unavailable } : {}),
  };

  // The newest certificate issued (set synchronously on subscribe, then on each renewal).
  const seen: { latest?: KeyCert } = {};
  let server: WebhookServer | undefined;
  const unsubscribe = secure.server.onServingCert((kc) => {
    seen.latest = kc;
    if (!server) return;
    try {
      server.setIdentity(kc);
      wlog.info('webhook serving certificate replaced', { notAfter: kc.notAfter.toISOString() });
    } catch (err) {
      wlog.error('webhook serving certificate could not be loaded; keeping the previous one', { error: errorMessage(err) });
    }
  });
  const first = seen.latest;
  if (!first) {
    unsubscribe();
    await injection.stop();
    throw new MeshError('INTERNAL', '--httpsAddr: the secure server has no serving certificate yet');
  }
  try {
    server = await WebhookServer.start({ host: listen.host, port: listen.port, handlers, identity: first, logger: wlog, registry });
  } catch (err) {
    unsubscribe();
    await injection.stop();
    throw new MeshError('UNAVAILABLE', `--httpsAddr ${wopts.httpsAddr}: ${errorMessage(err)}`, { cause: err });
  }
  if (seen.latest && seen.latest !== first) server.setIdentity(seen.latest); // renewed while the server was starting
  wlog.info('webhook server listening (HTTPS)', {
    addr: server.address,
    paths: ['/validate', '/inject', '/httpsReady'],
    inject: handlers.inject !== undefined,
    dnsNames: secure.server.dnsNames,
  });

  const singletonTasks: SingletonTask[] = cluster ? clusterTasks(opts, cluster, secure, injection, log, proxyConfigs) : [];
  const running = server;
  return {
    address: running.address,
    singletonTasks,
    async stop() {
      unsubscribe();
      await Promise.all([running.close(), injection.stop()]);
    },
  };
}

/** The webhooks' singleton work on a cluster: the caBundle patcher and the Gateway deployment controller. */
function clusterTasks(
  opts: DiscoveryOptions,
  cluster: KubeCluster,
  secure: RunningSecureGrpc,
  injection: Injection,
  log: Logger,
  proxyConfigs?: () => ProxyConfigSource,
): SingletonTask[] {
  const { kubeConfig, kube } = cluster;
  const wopts = opts.webhooks;
  const wlog = log.child('webhooks');
  const targets: CaBundleTarget[] = [];
  if (wopts.validationWebhookConfigName !== '')
    targets.push({ kind: 'ValidatingWebhookConfiguration', name: wopts.validationWebhookConfigName, failClosedWhenReady: true });
  if (wopts.injectionWebhookConfigName !== '')
    targets.push({
      kind: 'MutatingWebhookConfiguration',
      name: wopts.injectionWebhookConfigName,
      webhookSuffix: kube.INJECTION_WEBHOOK_SUFFIX,
    });
  const singletonTasks: SingletonTask[] =
    targets.length > 0
      ? [
          {
            name: 'webhook caBundle patcher',
            run: kube.webhookCaBundleTask({
              kubeConfig,
              logger: wlog.child('patcher'),
              revision: wopts.revision,
              targets,
              caBundlePem: () => secure.ca.trustBundlePem(),
              onCaBundleChange: (listener) => secure.ca.onRootsChange(() => listener()),
              failCloseProbe: kube.dryRunInvalidGatewayProbe(kubeConfig, opts.security.namespace, wopts.revision),
            }),
          },
        ]
      : [];
  if (injection.inputs && wopts.gatewayDeploy) {
    const inputs = injection.inputs.injectionOptions();
    const gatewayDeploy = wopts.gatewayDeploy;
    singletonTasks.push({
      name: 'gateway deployment controller',
      run: kube.gatewayDeployerTask({
        kubeConfig,
        logger: log.child('gateway-deploy'),
        options: gatewayDeploy,
        systemNamespace: opts.security.namespace,
        injector: inputs.injector,
        mesh: inputs.meshConfig,
        // As istiod's GetProxyConfigOrDefault for the gateway's pods (labelled with its name).
        proxyConfig: (namespace, labels) => proxyConfigFor(inputs.meshConfig(), {}, proxyConfigs?.(), { namespace, labels }),
      }),
    });
  }
  return singletonTasks;
}

interface Injection {
  readonly handler?: PathAdmissionHandler;
  /** The watched injector and mesh ConfigMaps (with a cluster). */
  readonly inputs?: KubeInjectionInputs;
  /** Why there is no handler. */
  readonly unavailable?: string;
  stop(): Promise<void>;
}

/**
 * /inject with a cluster: the injector and mesh ConfigMaps, Namespaces and Nodes are watched
 * (src/inject/kube-inputs.ts) and listed before the server answers, so no pod is injected from
 * defaults while the cluster's templates are still loading. Without a cluster there is nothing to
 * inject into; /inject then answers 404 saying so.
 */
async function startInjection(
  opts: DiscoveryOptions,
  cluster: KubeCluster | undefined,
  log: Logger,
  registry: Registry,
  proxyConfigs?: () => ProxyConfigSource,
): Promise<Injection> {
  if (!cluster) return { unavailable: 'it needs a cluster: --kubeconfig, or run in a Pod', stop: () => Promise.resolve() };
  const w = opts.webhooks;
  const meshConfigText = opts.meshConfigFile !== undefined ? await readFile(opts.meshConfigFile, 'utf8') : undefined;
  const inputs = new cluster.kube.KubeInjectionInputs({
    kubeConfig: cluster.kubeConfig,
    logger: log,
    namespace: opts.security.namespace,
    revision: w.revision,
    nativeSidecars: w.nativeSidecars,
    env: w.injectionEnv,
    ...(meshConfigText !== undefined ? { meshConfigText } : {}),
  });
  await inputs.start();
  const options = {
    ...inputs.injectionOptions({ logger: log, compliancePolicy: w.compliancePolicy, registry }),
    ...(proxyConfigs ? { proxyConfigs } : {}),
  };
  return { handler: injectionHandler(options), inputs, stop: () => inputs.stop() };
}

/**
 * Runs singleton tasks in this process until stopped. Used when leader election is off
 * (ENABLE_LEADER_ELECTION=false); otherwise the leader starts them in onStartedLeading and aborts them when it stops leading.
 */
export function runSingletonTasks(tasks: readonly SingletonTask[], log: Logger): { stop(): Promise<void> } {
  const ctrl = new AbortController();
  const done = tasks.map((t) =>
    t.run(ctrl.signal).catch((err: unknown) => log.error('singleton task failed', { task: t.name, error: errorMessage(err) })),
  );
  return {
    async stop() {
      ctrl.abort();
      await Promise.all(done);
    },
  };
}
