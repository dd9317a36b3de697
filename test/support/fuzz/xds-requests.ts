/**
 * fast-check arbitraries of abusive xDS clients: nodes with garbage metadata or no id, and
 * sequences of SotW / Delta requests with unknown type URLs, nonces from the future or the past,
 * NACKs of everything, subscribe/unsubscribe storms and huge resource name lists.
 */
import fc from 'fast-check';
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { TypeUrl } from '../../../src/xds/type-urls.js';
import type { AdsNode } from '../raw-ads-client.js';

export const KNOWN_TYPES: readonly string[] = Object.values(TypeUrl);

const WEIRD_TYPES = [
  '',
  'type.googleapis.com/envoy.api.v2.Cluster',
  'type.googleapis.com/garbage.v3.Nothing',
  '__proto__',
  'constructor',
  `type.googleapis.com/${'x'.repeat(4096)}`,
] as const;

/** A type URL: mostly served ones, sometimes unknown, empty or absurd. */
export const fuzzTypeUrl = (): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...KNOWN_TYPES) },
    { weight: 2, arbitrary: fc.constantFrom(...WEIRD_TYPES) },
    { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  );

/** Resource names a fuzz server knows (see xds-fuzz-server.ts), plus made-up ones and the wildcard. */
export const NAME_POOL = [
  'outbound|8080||echo.default.svc.cluster.local',
  'outbound|8080|v1|echo.default.svc.cluster.local',
  'outbound|9090||other.prod.svc.cluster.local',
  'echo.default.svc.cluster.local:8080',
  '8080',
  '0.0.0.0_8080',
  'inbound|8080||',
  'default',
  'ROOTCA',
  '*',
  '',
] as const;

export const fuzzName = (): fc.Arbitrary<string> =>
  fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...NAME_POOL) }, { weight: 1, arbitrary: fc.string({ maxLength: 30 }) });

export const fuzzNames = (): fc.Arbitrary<string[]> => fc.array(fuzzName(), { maxLength: 6 });

/** Which nonce a request carries. */
export type NonceChoice = 'last' | 'none' | 'future' | 'stale' | 'garbage';

const nonceChoice = (): fc.Arbitrary<NonceChoice> =>
  fc.oneof(
    { weight: 5, arbitrary: fc.constant<NonceChoice>('last') },
    { weight: 2, arbitrary: fc.constant<NonceChoice>('none') },
    { weight: 1, arbitrary: fc.constantFrom<NonceChoice>('future', 'stale', 'garbage') },
  );

/** One step of an abusive client. `reply` switches how the client answers every response from then on. */
export type XdsAction =
  | {
      readonly op: 'sotw';
      readonly typeUrl: string;
      readonly names: readonly string[];
      readonly nonce: NonceChoice;
      readonly version: 'last' | 'none' | 'garbage';
      readonly nack: boolean;
    }
  | {
      readonly op: 'delta';
      readonly typeUrl: string;
      readonly subscribe: readonly string[];
      readonly unsubscribe: readonly string[];
      readonly initial: Readonly<Record<string, string>>;
      readonly nonce: NonceChoice;
      readonly nack: boolean;
    }
  /** `times` alternating subscribe/unsubscribe requests of `names` (Delta) or name lists (SotW). */
  | { readonly op: 'storm'; readonly typeUrl: string; readonly names: readonly string[]; readonly times: number }
  /** One request naming `count` made-up resources. */
  | { readonly op: 'huge'; readonly typeUrl: string; readonly count: number }
  | { readonly op: 'reply'; readonly mode: ReplyMode }
  /** A config-change push from the server side (no real change: nothing should be re-sent). */
  | { readonly op: 'push' };

/** How the client answers each response it gets: not at all, ACK, NACK, or ACK with a stale nonce. */
export type ReplyMode = 'none' | 'ack' | 'nack' | 'stale-ack';

const sotwAction = (): fc.Arbitrary<XdsAction> =>
  fc
    .record({
      typeUrl: fuzzTypeUrl(),
      names: fuzzNames(),
      nonce: nonceChoice(),
      version: fc.constantFrom<'last' | 'none' | 'garbage'>('last', 'none', 'garbage'),
      nack: fc.boolean(),
    })
    .map((a) => ({ op: 'sotw', ...a }));

const deltaAction = (): fc.Arbitrary<XdsAction> =>
  fc
    .record({
      typeUrl: fuzzTypeUrl(),
      subscribe: fuzzNames(),
      unsubscribe: fuzzNames(),
      initial: fc.dictionary(fuzzName(), fc.string({ maxLength: 8 }), { maxKeys: 3 }),
      nonce: nonceChoice(),
      nack: fc.boolean(),
    })
    .map((a) => ({ op: 'delta', ...a }));

const commonActions = (): fc.Arbitrary<XdsAction>[] => [
  fc
    .record({ typeUrl: fuzzTypeUrl(), names: fc.array(fuzzName(), { minLength: 1, maxLength: 4 }), times: fc.integer({ min: 2, max: 60 }) })
    .map((a) => ({ op: 'storm' as const, ...a })),
  fc.constantFrom<ReplyMode>('none', 'ack', 'nack', 'stale-ack').map((mode) => ({ op: 'reply' as const, mode })),
  fc.constant({ op: 'push' as const }),
];

export interface FuzzActionOptions {
  /** Allow `huge` steps (tens of thousands of names; ~100 ms each). */
  readonly huge?: boolean;
}

export function fuzzActions(delta: boolean, opts: FuzzActionOptions = {}): fc.Arbitrary<XdsAction[]> {
  const huge = fc
    .record({ typeUrl: fuzzTypeUrl(), count: fc.integer({ min: 1000, max: 60_000 }) })
    .map((a) => ({ op: 'huge' as const, ...a }));
  const [storm, reply, push] = commonActions() as [fc.Arbitrary<XdsAction>, fc.Arbitrary<XdsAction>, fc.Arbitrary<XdsAction>];
  return fc.array(
    fc.oneof(
      { weight: 24, arbitrary: delta ? deltaAction() : sotwAction() },
      { weight: 4, arbitrary: storm },
      { weight: 4, arbitrary: reply },
      { weight: 2, arbitrary: push },
      // Rare: each costs up to a few hundred ms.
      { weight: opts.huge === false ? 0 : 1, arbitrary: huge },
    ),
    { minLength: 1, maxLength: 14 },
  );
}

const METADATA_KEYS = [
  'LABELS',
  'NAMESPACE',
  'GENERATOR',
  'CLUSTER_ID',
  'ISTIO_VERSION',
  'INTERCEPTION_MODE',
  'NETWORK',
  'SERVICE_ACCOUNT',
  'UNPRIVILEGED_POD',
  'WORKLOAD_NAME',
  'MESH_ID',
  'INSTANCE_IPS',
  'PROXY_CONFIG',
  '__proto__',
] as const;

/** Metadata with the keys istiod reads set to values of any JSON type. */
const garbageMetadata = (): fc.Arbitrary<JsonObject> =>
  fc.dictionary(fc.constantFrom(...METADATA_KEYS), fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>, { maxKeys: 6 }).map((m) => {
    // A Struct key "__proto__" must be an own property to reach the wire.
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(m))
      Object.defineProperty(out, k, { value: v, enumerable: true, configurable: true, writable: true });
    return out;
  });

export interface FuzzNode {
  readonly node: AdsNode;
  /** The server must refuse the stream (no id, or an id that is not istiod's format). */
  readonly refused: boolean;
}

/** A node for pod `pod`: mostly well-formed ids with garbage metadata, sometimes no id or a bad one. */
export function fuzzNode(pod: string): fc.Arbitrary<FuzzNode> {
  const id = (type: string): string => `${type}~10.9.0.1~${pod}.default~default.svc.cluster.local`;
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .tuple(fc.constantFrom('sidecar', 'router'), garbageMetadata())
        .map(([t, metadata]) => ({ node: { id: id(t), metadata }, refused: false })),
    },
    {
      weight: 2,
      arbitrary: garbageMetadata().map((m) => ({
        node: { id: id('sidecar'), metadata: { ...m, GENERATOR: 'grpc', NAMESPACE: 'default' } },
        refused: false,
      })),
    },
    { weight: 1, arbitrary: fc.constant({ node: { id: '' }, refused: true }) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(`nonsense-${pod}`, `sidecar~~${pod}`, `alien~1.2.3.4~${pod}.x~x.svc.cluster.local`)
        .map((bad) => ({ node: { id: bad }, refused: true })),
    },
  );
}
