import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { describe, it } from 'node:test';
import { parseDurationMs } from '../util/duration.js';
import { parseLeaderElectionOptions } from './options.js';

const parse = (env: NodeJS.ProcessEnv): ReturnType<typeof parseLeaderElectionOptions> => parseLeaderElectionOptions(env, parseDurationMs);

describe('leader election options', () => {
  it("istiod's timing by default (30s, ttl/2, ttl/4); identity POD_NAME, else hostname-pid", () => {
    assert.deepEqual(parse({ POD_NAME: 'istiod-7c9-abc' }), {
      enabled: true,
      identity: 'istiod-7c9-abc',
      leaseDurationMs: 30_000,
      renewDeadlineMs: 15_000,
      retryPeriodMs: 7_500,
    });
    assert.equal(parse({}).identity, `${hostname()}-${process.pid}`);
  });

  it('a lease duration alone scales the others; each can be set; ENABLE_LEADER_ELECTION=false', () => {
    assert.deepEqual(parse({ LEADER_ELECTION_LEASE_DURATION: '6s', POD_NAME: 'p' }), {
      enabled: true,
      identity: 'p',
      leaseDurationMs: 6_000,
      renewDeadlineMs: 3_000,
      retryPeriodMs: 1_500,
    });
    assert.equal(
      parse({ LEADER_ELECTION_LEASE_DURATION: '6s', LEADER_ELECTION_RENEW_DEADLINE: '4s', LEADER_ELECTION_RETRY_PERIOD: '1s' })
        .retryPeriodMs,
      1_000,
    );
    assert.equal(parse({ ENABLE_LEADER_ELECTION: 'false' }).enabled, false);
  });

  it('refuses settings client-go refuses, naming the variable', () => {
    assert.throws(
      () => parse({ LEADER_ELECTION_LEASE_DURATION: '10s', LEADER_ELECTION_RENEW_DEADLINE: '10s' }),
      /LEADER_ELECTION_LEASE_DURATION \(10000 ms\) must be more than LEADER_ELECTION_RENEW_DEADLINE \(10000 ms\)/,
    );
    assert.throws(
      () => parse({ LEADER_ELECTION_RENEW_DEADLINE: '5s', LEADER_ELECTION_RETRY_PERIOD: '5s' }),
      /RENEW_DEADLINE \(5000 ms\) must be more than 1.2 × LEADER_ELECTION_RETRY_PERIOD/,
    );
    assert.throws(() => parse({ LEADER_ELECTION_LEASE_DURATION: 'soon' }), /LEADER_ELECTION_LEASE_DURATION: "soon" is not a duration/);
    assert.throws(() => parse({ ENABLE_LEADER_ELECTION: 'maybe' }), /ENABLE_LEADER_ELECTION: "maybe" is not a boolean/);
  });
});
