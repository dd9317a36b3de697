import type { Logger } from '../../util/log.js';
import type { PushContext } from '../../model/index.js';
import type { XdsObserver } from '../xds-observer.js';
import type { XdsStats } from '../xds-stats.js';
import { metricsObserver, type NowClock } from './metrics-observer.js';
import { PropagationTracker } from './propagation-tracker.js';
import { PushVolume } from './push-volume.js';

/** The part of DiscoveryServer the observers need once it exists. */
export interface ObservedServer {
  readonly stats: XdsStats;
  push(): PushContext;
}

export interface Observability {
  /** Pass as DiscoveryServerOptions.observers. */
  readonly observers: readonly XdsObserver[];
  readonly tracker: PropagationTracker;
  /** Bytes and types per push version, recorded only while a live view (the console) subscribes. */
  readonly volume: PushVolume;
  /** Connects the observers to the server built with them (stats and the cache metrics). */
  attach(server: ObservedServer): void;
}

const defaultClock: NowClock = { now: () => performance.timeOrigin + performance.now() };

/**
 * Metrics and propagation tracking for one DiscoveryServer. The observers exist before the server
 * (they go into its options) and are attached to it right after it is built.
 */
export function createObservability(opts: { logger: Logger; clock?: NowClock }): Observability {
  const clock = opts.clock ?? defaultClock;
  let server: ObservedServer | undefined;
  const stats = (): XdsStats => {
    if (!server) throw new Error('observability used before attach()');
    return server.stats;
  };
  const tracker = new PropagationTracker({ logger: opts.logger, clock });
  const volume = new PushVolume();
  return {
    observers: [metricsObserver(stats, clock), tracker, volume],
    tracker,
    volume,
    attach(s) {
      server = s;
      s.stats.observeCache(() => s.push().cache);
    },
  };
}
