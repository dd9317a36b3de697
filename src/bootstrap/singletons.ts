/**
 * Singleton work of `meshpilot discovery` on a cluster: the istio-ca-root-cert publisher and
 * the webhooks' caBundle patcher run on one replica only, the holder of a coordination.k8s.io/v1
 * Lease in the system namespace. Every replica serves xDS, the CA and the webhooks regardless.
 *
 * Lease names are istiod's: the publisher under `istio-namespace-controller-election` (istiod's
 * NamespaceController lock), every other singleton under `istio-leader`. istiod keeps those two as
 * ConfigMap locks for backwards compatibility; meshpilot uses Leases of the same names, so it does not
 * share an election with a real istiod in the same namespace (run one or the other).
 *
 * Without a cluster, or with ENABLE_LEADER_ELECTION=false (istiod's "I am the only replica"), the
 * tasks run at once in this process.
 */
import type { LeaderElection } from '../leader/leader-election.js';
import { LEADER_LEASE, NAMESPACE_CONTROLLER_LEASE, type LeaderElectionOptions } from '../leader/index.js';
import type { LabelSelector } from '../config/index.js';
import type { IstioCa } from '../security/index.js';
import type { KubeCluster } from './kube-side.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { runSingletonTasks, type SingletonTask } from './webhooks.js';

export interface SingletonsOptions {
  readonly cluster: KubeCluster | undefined;
  /** POD_NAMESPACE: where the Leases live. */
  readonly namespace: string;
  readonly leaderElection: LeaderElectionOptions;
  /** The CA, when the secure server runs: its roots are published. */
  readonly ca: IstioCa | undefined;
  readonly discoverySelectors: readonly LabelSelector[];
  /** More singleton tasks (the webhooks' caBundle patcher), run under `istio-leader`. */
  readonly tasks: readonly SingletonTask[];
  readonly logger: Logger;
}

export interface RunningSingletons {
  /** The elections, by lease name (empty without leader election). */
  readonly elections: ReadonlyMap<string, LeaderElection>;
  /** Stops the work; a leader releases its leases. */
  stop(): Promise<void>;
}

export function startSingletons(opts: SingletonsOptions): RunningSingletons {
  const log = opts.logger;
  const groups = new Map<string, SingletonTask[]>();
  const add = (lease: string, task: SingletonTask): void => void groups.set(lease, [...(groups.get(lease) ?? []), task]);
  const { cluster, ca } = opts;
  if (cluster && ca) {
    add(NAMESPACE_CONTROLLER_LEASE, {
      name: 'istio-ca-root-cert publisher',
      run: cluster.kube.rootCertPublisherTask({
        kubeConfig: cluster.kubeConfig,
        logger: log.child('root-cert'),
        trustBundlePem: () => ca.trustBundlePem(),
        onRootsChange: (listener) => ca.onRootsChange(() => listener()),
        discoverySelectors: opts.discoverySelectors,
      }),
    });
  }
  for (const t of opts.tasks) add(LEADER_LEASE, t);

  if (!cluster || !opts.leaderElection.enabled) {
    if (cluster && groups.size > 0)
      log.info('leader election disabled (ENABLE_LEADER_ELECTION=false): running the singleton tasks here', {
        tasks: [...groups.values()].flat().map((t) => t.name),
      });
    const running = runSingletonTasks([...groups.values()].flat(), log);
    return { elections: new Map(), stop: () => running.stop() };
  }

  const le = opts.leaderElection;
  const elections = new Map<string, LeaderElection>();
  for (const [lease, tasks] of groups) {
    elections.set(
      lease,
      cluster.kube.startLeaderElection({
        kubeConfig: cluster.kubeConfig,
        namespace: opts.namespace,
        name: lease,
        identity: le.identity,
        leaseDurationMs: le.leaseDurationMs,
        renewDeadlineMs: le.renewDeadlineMs,
        retryPeriodMs: le.retryPeriodMs,
        logger: log.child('leader'),
        onStartedLeading: async (signal) => {
          log.info('starting singleton tasks as leader', { lease, tasks: tasks.map((t) => t.name) });
          await Promise.all(
            tasks.map((t) =>
              t.run(signal).catch((err: unknown) => log.error('singleton task failed', { lease, task: t.name, error: errorMessage(err) })),
            ),
          );
        },
      }),
    );
  }
  return {
    elections,
    async stop() {
      await Promise.all([...elections.values()].map((e) => e.stop()));
    },
  };
}
