/**
 * Leader-election settings, parsed once at start-up from the environment:
 *
 * - ENABLE_LEADER_ELECTION (istiod's, default true): false means "I am the only replica" — the
 *   singleton tasks run at once, no Lease is used.
 * - POD_NAME (istiod's identity); without it `<hostname>-<pid>`, not istiod's `unknown-<hostname>`:
 *   two replicas on one host (tests, a laptop) must not share an identity, or both would lead.
 * - istiod's timing: a 30 s lease, renew deadline ttl/2, retry ttl/4. istiod hard-codes them (tests
 *   override in Go); here LEADER_ELECTION_LEASE_DURATION, LEADER_ELECTION_RENEW_DEADLINE and
 *   LEADER_ELECTION_RETRY_PERIOD (Go durations) change them, the last two defaulting to ttl/2, ttl/4.
 */
import { hostname } from 'node:os';
import { MeshError } from '../util/errors.js';

export interface LeaderElectionOptions {
  readonly enabled: boolean;
  /** holderIdentity written into the Lease. */
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

/** client-go's JitterFactor: a retry waits retryPeriod × [1, 1.2). */
export const RETRY_JITTER = 1.2;

export const DEFAULT_LEASE_DURATION_MS = 30_000;

/**
 * Parses the settings; `parseDuration` is the CLI's Go-duration parser (passed in so this module
 * does not depend on the bootstrap layer).
 */
export function parseLeaderElectionOptions(
  env: NodeJS.ProcessEnv,
  parseDuration: (text: string, what: string) => number,
): LeaderElectionOptions {
  const enabledText = env.ENABLE_LEADER_ELECTION?.trim();
  let enabled = true;
  if (enabledText !== undefined && enabledText !== '') {
    if (/^(1|true|t|yes)$/i.test(enabledText)) enabled = true;
    else if (/^(0|false|f|no)$/i.test(enabledText)) enabled = false;
    else throw new MeshError('INVALID_ARGUMENT', `ENABLE_LEADER_ELECTION: "${enabledText}" is not a boolean`);
  }
  const ms = (name: string, dflt: number): number => {
    const v = env[name];
    if (v === undefined || v.trim() === '') return dflt;
    const n = parseDuration(v, name);
    if (!(n > 0)) throw new MeshError('INVALID_ARGUMENT', `${name}: "${v}" must be more than 0`);
    return n;
  };
  const leaseDurationMs = ms('LEADER_ELECTION_LEASE_DURATION', DEFAULT_LEASE_DURATION_MS);
  const renewDeadlineMs = ms('LEADER_ELECTION_RENEW_DEADLINE', leaseDurationMs / 2);
  const retryPeriodMs = ms('LEADER_ELECTION_RETRY_PERIOD', leaseDurationMs / 4);
  // client-go's own checks: a leader must give up before others may take over, and retry within its deadline.
  if (leaseDurationMs <= renewDeadlineMs) {
    throw new MeshError(
      'INVALID_ARGUMENT',
      `LEADER_ELECTION_LEASE_DURATION (${leaseDurationMs} ms) must be more than LEADER_ELECTION_RENEW_DEADLINE (${renewDeadlineMs} ms)`,
    );
  }
  if (renewDeadlineMs <= RETRY_JITTER * retryPeriodMs) {
    throw new MeshError(
      'INVALID_ARGUMENT',
      `LEADER_ELECTION_RENEW_DEADLINE (${renewDeadlineMs} ms) must be more than ${RETRY_JITTER} × LEADER_ELECTION_RETRY_PERIOD (${retryPeriodMs} ms)`,
    );
  }
  if (leaseDurationMs < 1000)
    throw new MeshError('INVALID_ARGUMENT', `LEADER_ELECTION_LEASE_DURATION: ${leaseDurationMs} ms is under the Lease's 1 s resolution`);
  const pod = env.POD_NAME?.trim();
  return {
    enabled,
    identity: pod ? pod : `${hostname()}-${process.pid}`,
    leaseDurationMs,
    renewDeadlineMs,
    retryPeriodMs,
  };
}
