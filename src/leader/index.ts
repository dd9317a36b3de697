/** Public surface of leader election: a Lease-based elector and its settings. */
export { startLeaderElection, type LeaderElection, type LeaderElectionConfig } from './leader-election.js';
export { LeaseLock, leaseRecordOf, type LeaseRecord, type ObservedLease } from './lease-lock.js';
export { parseLeaderElectionOptions, DEFAULT_LEASE_DURATION_MS, type LeaderElectionOptions } from './options.js';

/** istiod's lease names (pilot/pkg/leaderelection): the namespace controller's, and the general one. */
export { LEADER_LEASE, NAMESPACE_CONTROLLER_LEASE } from './lease-names.js';
