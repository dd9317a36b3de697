/**
 * WorkloadEntry auto-registration and health in `meshpilot discovery` (istiod builds its
 * WorkloadEntryController in configcontroller.go): where entries are written — the API server
 * with a cluster, an in-memory config source beside the files without one — and who a stream
 * authenticated as, for the identity check.
 */
import { Counter, type Registry } from 'prom-client';
import {
  MemoryWorkloadEntryStore,
  WorkloadEntryController,
  type AutoRegistrationStats,
  type WorkloadEntryStore,
} from '../autoregistration/index.js';
import { MemorySource, type ConfigSource, type ConfigStore } from '../config/index.js';
import type { Proxy } from '../model/index.js';
import { streamOriginOf } from '../security/index.js';
import { parseSpiffeId } from '../security/spiffe.js';
import type { Logger } from '../util/log.js';
import type { KubeCluster } from './kube-side.js';
import type { DiscoveryOptions } from './options.js';

export interface WorkloadEntries {
  readonly controller: WorkloadEntryController;
  /** File mode: the source holding the auto-registered entries, to start beside the others. */
  readonly source: ConfigSource | undefined;
}

/** The SPIFFE identity the proxy's stream authenticated with (the secure port); none on plaintext. */
function verifiedIdentity(proxy: Proxy): { namespace: string; serviceAccount: string } | undefined {
  for (const raw of streamOriginOf(proxy)?.caller?.identities ?? []) {
    const id = parseSpiffeId(raw);
    if (id) return { namespace: id.namespace, serviceAccount: id.serviceAccount };
  }
  return undefined;
}

/** istiod's auto_registration_* counters, read from the controller at scrape time. */
function registerMetrics(metrics: Registry, stats: AutoRegistrationStats): void {
  const counters: readonly [string, string, keyof AutoRegistrationStats][] = [
    ['auto_registration_success_total', 'Total number of successful auto registrations.', 'registrations'],
    ['auto_registration_updates_total', 'Total number of auto registration updates.', 'updates'],
    ['auto_registration_unregister_total', 'Total number of unregistrations.', 'unregistrations'],
    ['auto_registration_deletes_total', 'Total number of auto registration cleaned up by periodic timer.', 'deletes'],
    ['auto_registration_errors_total', 'Total number of auto registration errors.', 'errors'],
  ];
  for (const [name, help, field] of counters)
    new Counter({
      name,
      help,
      registers: [metrics],
      collect() {
        this.reset();
        this.inc(stats[field]);
      },
    });
}

export function workloadEntries(
  opts: DiscoveryOptions,
  store: ConfigStore,
  cluster: KubeCluster | undefined,
  metrics: Registry,
  log: Logger,
): WorkloadEntries | undefined {
  const o = opts.workloadEntries;
  if (!o.autoRegistration && !o.healthChecks) return undefined;
  const memory = cluster ? undefined : new MemorySource({ name: 'auto-registration' });
  const entries: WorkloadEntryStore = cluster
    ? new cluster.kube.KubeWorkloadEntryStore(cluster.kubeConfig)
    : new MemoryWorkloadEntryStore(memory!);
  const controller = new WorkloadEntryController({
    instanceId: opts.leaderElection.identity,
    store: entries,
    group: (namespace, name) => store.snapshot().get('WorkloadGroup', namespace, name),
    gracePeriodMs: o.gracePeriodMs,
    maxConnectionAgeMs: opts.maxServerConnectionAgeMs,
    autoRegistration: o.autoRegistration,
    healthChecks: o.healthChecks,
    validateIdentity: o.validateIdentity,
    identity: verifiedIdentity,
    logger: log,
  });
  registerMetrics(metrics, controller.stats);
  // A WorkloadGroup created after its proxies connected registers them then (istiod's late
  // registration); a deleted one takes its entries along (the API server's garbage collection).
  store.onChange((events) => {
    for (const e of events) {
      if (e.key.kind !== 'WorkloadGroup') continue;
      if (e.type === 'add') controller.onGroupAdded(e.key.namespace, e.key.name);
      if (e.type === 'delete') void controller.onGroupDeleted(e.key.namespace, e.key.name);
    }
  });
  return { controller, source: memory };
}
