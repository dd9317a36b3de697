/**
 * Public surface of leader election without the Kubernetes client: its settings and lease names.
 * The elector itself is leader-election.ts (it loads the client; cluster mode only).
 */
export { parseLeaderElectionOptions, type LeaderElectionOptions } from './options.js';

/** istiod's lease names (pilot/pkg/leaderelection): the namespace controller's, and the general one. */
export { LEADER_LEASE, NAMESPACE_CONTROLLER_LEASE } from './lease-names.js';
