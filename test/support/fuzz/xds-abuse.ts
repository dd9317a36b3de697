/**
 * Runs one abusive client (a node and a sequence of XdsActions) against a FuzzXdsServer and
 * checks the protocol-abuse properties:
 * - a node without a usable id is refused with INVALID_ARGUMENT naming the problem; others are served;
 * - no push loop: the server writes at most one response per request the client initiated, plus
 *   one per watched type per server-side push; ACKs, NACKs and stale nonces the client sends in
 *   reply to responses earn nothing; after a probe, nothing more arrives before the next probe;
 * - per-stream state is bounded: watched types are those requested, watched names per type a
 *   subset of the names requested for it; the connection is gone once the stream closes.
 */
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { AdsStream } from '../raw-ads-client.js';
import { DeltaStream } from '../raw-delta-client.js';
import { waitFor } from '../wait.js';
import type { FuzzXdsServer } from './xds-fuzz-server.js';
import type { FuzzNode, NonceChoice, ReplyMode, XdsAction } from './xds-requests.js';

export interface AbuseCase {
  readonly delta: boolean;
  readonly node: FuzzNode;
  readonly actions: readonly XdsAction[];
}

export interface AbuseResult {
  readonly requests: number;
  readonly responses: number;
  readonly ms: number;
  /** Most names the server held for one type of this stream. */
  readonly maxWatchedNames: number;
}

/** Stops a looping exchange from spinning the test forever: far above any legitimate count. */
const MAX_REPLIES = 2000;
const NACK = { code: grpc.status.INVALID_ARGUMENT, message: 'fuzz: rejected' };
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What the client tracks per type: nonces seen, last version. */
class Seen {
  readonly #first = new Map<string, string>();
  readonly #last = new Map<string, { nonce: string; version: string }>();

  saw(typeUrl: string, nonce: string, version: string): void {
    if (!this.#first.has(typeUrl)) this.#first.set(typeUrl, nonce);
    this.#last.set(typeUrl, { nonce, version });
  }

  nonce(typeUrl: string, choice: NonceChoice): string {
    const last = this.#last.get(typeUrl)?.nonce ?? '';
    switch (choice) {
      case 'last':
        return last;
      case 'none':
        return '';
      case 'future':
        return `${last || 'ffffffff-0'}zz`;
      case 'stale':
        return this.#first.get(typeUrl) ?? 'stale-0';
      case 'garbage':
        return '\u0000garbage\uffff';
    }
  }

  version(typeUrl: string): string {
    return this.#last.get(typeUrl)?.version ?? '';
  }
}

const hugeNames = (count: number): string[] => Array.from({ length: count }, (_, i) => `huge-${i}`);

/** One request as the driver means it; each wire writes it in its protocol. */
interface WireRequest {
  readonly typeUrl: string;
  /** SotW: the full list; Delta: names to subscribe. */
  readonly names: readonly string[];
  /** Delta only. */
  readonly unsubscribe?: readonly string[];
  readonly initial?: Readonly<Record<string, string>>;
  readonly nonce: string;
  readonly version: string;
  readonly nack?: boolean;
}

/** A SotW or Delta stream seen through what the driver needs. */
interface Wire {
  readonly delta: boolean;
  readonly ended: Promise<{ code: number; details: string }>;
  isOpen(): boolean;
  close(): void;
  request(r: WireRequest): void;
  /** Answers a response as `mode` says (never 'none'). */
  reply(typeUrl: string, nonce: string, version: string, mode: Exclude<ReplyMode, 'none'>): void;
  onResponse(fn: (typeUrl: string, nonce: string, version: string) => void): void;
}

/** What both raw clients share. */
const lifecycle = (s: AdsStream | DeltaStream): Pick<Wire, 'delta' | 'ended' | 'isOpen' | 'close'> => ({
  delta: s instanceof DeltaStream,
  ended: s.ended,
  isOpen: () => s.isOpen(),
  close: () => s.close(),
});

function sotwWire(addr: string, node: FuzzNode): Wire {
  const s = AdsStream.open(addr, { node: node.node, passive: true });
  return {
    ...lifecycle(s),
    request: (r) =>
      s.send({
        typeUrl: r.typeUrl,
        resourceNames: r.names,
        responseNonce: r.nonce,
        versionInfo: r.version,
        ...(r.nack ? { errorDetail: NACK } : {}),
      }),
    // An ACK/NACK carries the type's current names, as clients send them.
    reply: (typeUrl, nonce, version, mode) =>
      s.send({
        typeUrl,
        resourceNames: s.typeState(typeUrl).names,
        versionInfo: mode === 'nack' ? s.typeState(typeUrl).accepted : version,
        responseNonce: mode === 'stale-ack' ? `${nonce}-stale` : nonce,
        ...(mode === 'nack' ? { errorDetail: NACK } : {}),
      }),
    onResponse: (fn) => s.onResponse((r) => fn(r.resp.typeUrl, r.resp.nonce, r.resp.versionInfo)),
  };
}

function deltaWire(addr: string, node: FuzzNode): Wire {
  const s = DeltaStream.open(addr, { node: node.node, passive: true });
  return {
    ...lifecycle(s),
    request: (r) =>
      s.send({
        typeUrl: r.typeUrl,
        subscribe: r.names,
        unsubscribe: r.unsubscribe ?? [],
        responseNonce: r.nonce,
        ...(r.initial ? { initialVersions: r.initial } : {}),
        ...(r.nack ? { errorDetail: NACK } : {}),
      }),
    reply: (typeUrl, nonce, _version, mode) =>
      s.send({
        typeUrl,
        responseNonce: mode === 'stale-ack' ? `${nonce}-stale` : nonce,
        ...(mode === 'nack' ? { errorDetail: NACK } : {}),
      }),
    onResponse: (fn) => s.onResponse((r) => fn(r.resp.typeUrl, r.resp.nonce, r.resp.systemVersionInfo)),
  };
}

/** Drives a wire through XdsActions, counting requests and replies and what was asked for. */
class Driver {
  readonly seen = new Seen();
  requests = 0;
  replies = 0;
  mode: ReplyMode = 'none';
  /** Names requested per type over the whole sequence (the bound of what the server may hold). */
  readonly requested = new Map<string, Set<string>>();
  #probe: { typeUrl: string; resolve: () => void } | undefined;

  constructor(readonly wire: Wire) {
    wire.onResponse((typeUrl, nonce, version) => {
      this.seen.saw(typeUrl, nonce, version);
      if (this.#probe?.typeUrl === typeUrl) this.#probe.resolve();
      if (this.mode === 'none' || this.replies >= MAX_REPLIES || !wire.isOpen()) return;
      this.replies++;
      wire.reply(typeUrl, nonce, version, this.mode);
    });
  }

  #request(r: WireRequest): void {
    let set = this.requested.get(r.typeUrl);
    if (!set) this.requested.set(r.typeUrl, (set = new Set()));
    for (const n of [...r.names, ...Object.keys(r.initial ?? {})]) set.add(n);
    this.requests++;
    this.wire.request(r);
  }

  send(a: XdsAction): void {
    const last = (typeUrl: string): { nonce: string; version: string } => ({
      nonce: this.seen.nonce(typeUrl, 'last'),
      version: this.seen.version(typeUrl),
    });
    switch (a.op) {
      case 'sotw': {
        const version = a.version === 'last' ? this.seen.version(a.typeUrl) : a.version === 'none' ? '' : 'v-garbage';
        this.#request({ typeUrl: a.typeUrl, names: a.names, nonce: this.seen.nonce(a.typeUrl, a.nonce), version, nack: a.nack });
        return;
      }
      case 'delta':
        this.#request({
          typeUrl: a.typeUrl,
          names: a.subscribe,
          unsubscribe: a.unsubscribe,
          initial: a.initial,
          nonce: this.seen.nonce(a.typeUrl, a.nonce),
          version: '',
          nack: a.nack,
        });
        return;
      case 'storm':
        // SotW flips between two lists; Delta subscribes and unsubscribes the same names.
        for (let i = 0; i < a.times; i++) {
          const even = i % 2 === 0;
          const names = even ? a.names : this.wire.delta ? [] : a.names.slice(0, 1);
          this.#request({ typeUrl: a.typeUrl, names, unsubscribe: even || !this.wire.delta ? [] : a.names, ...last(a.typeUrl) });
        }
        return;
      case 'huge':
        this.#request({ typeUrl: a.typeUrl, names: hugeNames(a.count), ...last(a.typeUrl) });
        return;
      default:
        return;
    }
  }

  /** Asks for a fresh type (always answered) and waits for the answer: every earlier request is handled by then. */
  async probe(typeUrl: string): Promise<void> {
    const got = new Promise<void>((resolve) => (this.#probe = { typeUrl, resolve }));
    this.#request({ typeUrl, names: ['probe'], nonce: '', version: '' });
    await got;
  }
}

let probeCounter = 0;

/** Runs one case; throws (assert) when a property does not hold. `pod` must be unique per case. */
export async function runAbuseCase(srv: FuzzXdsServer, c: AbuseCase, pod: string): Promise<AbuseResult> {
  const t0 = performance.now();
  const problemsBefore = srv.problems.length;
  const d = new Driver(c.delta ? deltaWire(srv.addr, c.node) : sotwWire(srv.addr, c.node));
  try {
    if (c.node.refused) {
      const typed = c.actions.flatMap((a) => ('typeUrl' in a && a.typeUrl !== '' ? [a.typeUrl] : []));
      d.send({ op: 'sotw', typeUrl: typed[0] ?? 'x', names: [], nonce: 'none', version: 'none', nack: false });
      const end = await d.wire.ended;
      assert.equal(end.code, grpc.status.INVALID_ARGUMENT, `refused node ${c.node.node.id}: ${end.code} ${end.details}`);
      assert.match(end.details, /node/, `the refusal names the node problem: ${end.details}`);
      return { requests: d.requests, responses: 0, ms: performance.now() - t0, maxWatchedNames: 0 };
    }
    let pushes = 0;
    for (const a of c.actions) {
      if (a.op === 'reply') d.mode = a.mode;
      else if (a.op === 'push') {
        srv.pushNothing();
        pushes++;
        await sleep(15); // past the 5 ms debounce
      } else d.send(a);
      await tick();
    }

    const probe1 = `fuzz.probe/${++probeCounter}`;
    await Promise.race([d.probe(probe1), d.wire.ended.then((e) => assert.fail(`stream ended: ${e.code} ${e.details}`))]);
    const conn = srv.connection(pod);
    assert.ok(conn, `no server connection for ${pod}`);
    const initiated = d.requests; // replies (ACK/NACK) go around the counter
    const types = conn.watchedTypes();
    const afterProbe1 = srv.responses.get(conn.id) ?? 0;
    // One answer per initiated request at most, plus what a push may send per watched type, plus
    // one per type where a reply changed the names (an ACK carries the client's current list, which
    // differs from the server's after a NACK that asked for other names: a resubscribe, answered once).
    const bound = initiated + (pushes + (d.replies > 0 ? 1 : 0)) * types.length;
    assert.ok(
      afterProbe1 <= bound,
      `push loop? ${afterProbe1} responses for ${initiated} requests, ${pushes} pushes × ${types.length} types (${d.replies} replies)`,
    );

    // Then quiet: replies in flight may resubscribe once per type; after that, only probes are answered.
    const probe2 = `fuzz.probe/${++probeCounter}`;
    await sleep(5);
    await d.probe(probe2);
    const afterProbe2 = srv.responses.get(conn.id) ?? 0;
    assert.ok(
      afterProbe2 - afterProbe1 <= 1 + (d.replies > 0 ? types.length : 0),
      `responses between two probes: ${afterProbe2 - afterProbe1}`,
    );
    const probe3 = `fuzz.probe/${++probeCounter}`;
    await sleep(5);
    await d.probe(probe3);
    const afterProbe3 = srv.responses.get(conn.id) ?? 0;
    assert.equal(
      afterProbe3 - afterProbe2,
      1,
      `push loop: ${afterProbe3 - afterProbe2} responses after settling (only the third probe's answer is due)`,
    );

    let maxWatchedNames = 0;
    for (const w of conn.watchedTypes()) {
      if (w.typeUrl.startsWith('fuzz.probe/')) continue;
      const asked = d.requested.get(w.typeUrl);
      assert.ok(asked, `the server watches ${w.typeUrl.slice(0, 80)}, which was never requested`);
      for (const n of w.names) assert.ok(asked.has(n), `watched name ${n.slice(0, 80)} of ${w.typeUrl.slice(0, 80)} was never requested`);
      maxWatchedNames = Math.max(maxWatchedNames, w.names.size);
    }
    const errors = srv.problems.slice(problemsBefore).filter((l) => l.level === 'error');
    assert.deepEqual(errors, [], 'the server logged errors');
    const id = conn.id;
    d.wire.close();
    await waitFor(() => !srv.xds.connectionList().some((x) => x.id === id), {
      timeoutMs: 5000,
      description: `connection ${id} gone after close`,
    });
    return { requests: d.requests, responses: afterProbe3, ms: performance.now() - t0, maxWatchedNames };
  } finally {
    d.wire.close();
  }
}

/** Short form of a case for counterexample output. */
export function describeCase(c: AbuseCase): string {
  const acts = c.actions.map((a) => {
    switch (a.op) {
      case 'sotw':
        return `sotw(${a.typeUrl.slice(0, 60)}, [${a.names.join(',').slice(0, 80)}], nonce=${a.nonce}, version=${a.version}${a.nack ? ', NACK' : ''})`;
      case 'delta':
        return `delta(${a.typeUrl.slice(0, 60)}, +[${a.subscribe.join(',').slice(0, 60)}], -[${a.unsubscribe.join(',').slice(0, 60)}], initial=${Object.keys(a.initial).length}, nonce=${a.nonce}${a.nack ? ', NACK' : ''})`;
      case 'storm':
        return `storm(${a.typeUrl.slice(0, 60)}, ${a.times}×[${a.names.join(',').slice(0, 60)}])`;
      case 'huge':
        return `huge(${a.typeUrl.slice(0, 60)}, ${a.count})`;
      case 'reply':
        return `reply=${a.mode}`;
      case 'push':
        return 'push';
    }
  });
  return `${c.delta ? 'Delta' : 'SotW'} node=${JSON.stringify(c.node.node).slice(0, 200)}: ${acts.join('; ')}`;
}
