/**
 * Malformed config for property tests: per-document mutations that validation must reject (each
 * with what the error must name), and per-file corruptions (syntax errors, non-UTF-8 bytes, alias
 * bombs, deep nesting, multi-MB files) that may fail the whole file. A FuzzFile records what was
 * meant, so a property can say what must apply and what must be reported.
 */
import fc from 'fast-check';
import { stringify } from 'yaml';
import { keyOfObject, validObject, type FuzzObject } from './istio-objects.js';

/** What a document in a generated file is expected to do. */
export type DocExpect =
  /** Unchanged valid object: must apply (unless a file-level corruption broke the file). */
  | { readonly kind: 'valid'; readonly key: string; readonly object: FuzzObject }
  /**
   * Broken so validation must reject it: an error names `errorKind` (and `key`'s namespace/name
   * when `nameReadable`), with a field path containing `path`.
   */
  | {
      readonly kind: 'invalid';
      readonly key: string;
      readonly errorKind: string;
      readonly nameReadable: boolean;
      readonly path: string;
      readonly mutation: string;
    }
  /** Not an object of ours, or may or may not validate: only "no crash" is asked of it. */
  | { readonly kind: 'any'; readonly mutation: string };

export interface PlannedDoc {
  readonly value: unknown;
  readonly expect: DocExpect;
}

const RE2_INVALID = ['(?<=a)b', 'a(?!b)', '(a', 'a)', '[z-a]', '\\1(a)', 'x{1001}', '(?P<n>a)(?P=n)', '*a', 'a**', '\\'];

let FIELD_NAME: fc.Arbitrary<string> | undefined;
const unknownFieldName = (): fc.Arbitrary<string> => (FIELD_NAME ??= fc.stringMatching(/^[a-z][a-zA-Z]{2,10}$/));

type Mutator = (o: FuzzObject) => fc.Arbitrary<PlannedDoc>;

const clone = (o: FuzzObject): FuzzObject => structuredClone(o);
const invalid = (o: FuzzObject, mutation: string, path: string, value: unknown, nameReadable = true): PlannedDoc => ({
  value,
  expect: { kind: 'invalid', key: keyOfObject(o), errorKind: o.kind, nameReadable, path, mutation },
});

/** Mutations validation must reject, each applicable to any kind of FuzzObject. */
const MUTATORS: readonly Mutator[] = [
  // Unknown field in spec (Istio's CRDs preserve unknown fields; istiod's validation rejects them).
  (o) =>
    unknownFieldName()
      .filter(
        (f) =>
          ![
            'hosts',
            'http',
            'host',
            'ports',
            'servers',
            'mtls',
            'rules',
            'action',
            'selector',
            'address',
            'labels',
            'egress',
            'location',
            'resolution',
            'subsets',
            'trafficPolicy',
            'workloadSelector',
            'network',
            'locality',
            'weight',
            'tcp',
            'tls',
            'gateways',
            'exportTo',
            'endpoints',
            'addresses',
            'portLevelMtls',
            'provider',
            'ingress',
            'outboundTrafficPolicy',
            'inboundConnectionPool',
            'serviceAccount',
            'subjectAltNames',
            'delegate',
            'workloadSelectors',
            'targetRef',
            'targetRefs',
            'serviceAccount',
          ].includes(f),
      )
      .map((f) => {
        const c = clone(o);
        c.spec[f] = { surprise: true };
        return invalid(o, 'unknown field', `spec.${f}`, c);
      }),
  // spec of the wrong type altogether.
  (o) =>
    fc
      .constantFrom<unknown>('a string', 42, ['list'], true)
      .map((v) => invalid(o, 'spec of a wrong type', 'spec', { ...clone(o), spec: v })),
  // metadata.name not an RFC 1123 subdomain (upper case, underscore, huge).
  (o) =>
    fc.constantFrom('Upper', 'under_score', 'dot.', '-lead', 'x'.repeat(254), 'y'.repeat(100_000)).map((n) => {
      const c = clone(o);
      c.metadata.name = n;
      return {
        value: c,
        expect: {
          kind: 'invalid',
          key: `${o.kind}/${o.metadata.namespace}/${n}`,
          errorKind: o.kind,
          nameReadable: true,
          path: 'metadata.name',
          mutation: 'invalid name',
        },
      };
    }),
  // metadata.name of a wrong type: reported, but the object cannot be named.
  (o) =>
    fc
      .constantFrom<unknown>(5, ['a'], { a: 1 })
      .map((n) => invalid(o, 'name of a wrong type', 'metadata.name', { ...clone(o), metadata: { ...o.metadata, name: n } }, false)),
  // A label value that YAML reads as a number.
  (o) =>
    fc
      .integer()
      .map((v) =>
        invalid(o, 'label of a wrong type', 'metadata.labels', { ...clone(o), metadata: { ...o.metadata, labels: { version: v } } }),
      ),
  // A served kind with a version Istio never had.
  (o) =>
    fc
      .constantFrom('v9', 'v2alpha1')
      .map((v) =>
        invalid(o, 'unsupported apiVersion', 'apiVersion', { ...clone(o), apiVersion: `${o.apiVersion.split('/')[0] ?? ''}/${v}` }),
      ),
  // A `__proto__` key (a plain object cannot hold one: it must be reported, not dropped).
  (o) =>
    fc.boolean().map((inSpec) => {
      const c = clone(o);
      if (inSpec) Object.defineProperty(c.spec, '__proto__', { value: { x: 1 }, enumerable: true, configurable: true, writable: true });
      else
        Object.defineProperty((c.metadata.labels = {}), '__proto__', { value: 'v1', enumerable: true, configurable: true, writable: true });
      return invalid(o, '__proto__ key', inSpec ? 'spec.__proto__' : 'metadata.labels[__proto__]', c);
    }),
  // Kind-specific breakage.
  (o) => kindSpecific(o),
];

function kindSpecific(o: FuzzObject): fc.Arbitrary<PlannedDoc> {
  const c = clone(o);
  const s = c.spec;
  switch (o.kind) {
    case 'VirtualService':
      return fc.oneof(
        fc.constantFrom(...RE2_INVALID).map((re) => {
          const routes = s.http as Record<string, unknown>[];
          routes[0] = { ...routes[0], match: [{ uri: { regex: re } }] };
          return invalid(o, `invalid RE2 ${re}`, 'spec.http[0].match[0].uri.regex', c);
        }),
        fc.integer({ min: -1_000_000, max: -1 }).map((w) => {
          const h = (s.hosts as string[])[0] ?? 'x';
          const routes = s.http as Record<string, unknown>[];
          routes[0] = {
            route: [
              { destination: { host: h }, weight: w },
              { destination: { host: h, subset: 'b' }, weight: 50 },
            ],
          };
          return invalid(o, `negative weight ${w}`, 'spec.http[0].route', c);
        }),
        fc
          .constantFrom<unknown>(42, 'not-a-list', { a: 1 })
          .map((v) => invalid(o, 'hosts of a wrong type', 'spec.hosts', { ...c, spec: { ...s, hosts: v } })),
        fc.constant(
          invalid(o, 'bad timeout', 'spec.http[0].timeout', {
            ...c,
            spec: { ...s, http: [{ ...(s.http as object[])[0], timeout: 'soon' }] },
          }),
        ),
      );
    case 'ServiceEntry':
      return fc.oneof(
        fc.constantFrom(0, 65536, 70_000, 4_294_967_295).map((p) => {
          (s.ports as Record<string, unknown>[])[0] = { number: p, name: 'http-x', protocol: 'HTTP' };
          return invalid(o, `port ${p}`, 'spec.ports[0].number', c);
        }),
        fc.constantFrom(-1, 4_294_967_296, 1.5, 'eighty').map((p) => {
          (s.ports as Record<string, unknown>[])[0] = { number: p, name: 'http-x', protocol: 'HTTP' };
          return invalid(o, `port ${String(p)} (not a uint32)`, 'spec.ports[0].number', c);
        }),
        fc.constant(invalid(o, 'no hosts', 'spec.hosts', { ...c, spec: { ...s, hosts: [] } })),
      );
    case 'DestinationRule':
      return fc.oneof(
        fc.constant(invalid(o, 'no host', 'spec.host', { ...c, spec: { ...s, host: '' } })),
        fc.constant(
          invalid(o, 'unknown enum', 'spec.trafficPolicy.loadBalancer.simple', {
            ...c,
            spec: { ...s, trafficPolicy: { loadBalancer: { simple: 'FASTEST' } } },
          }),
        ),
      );
    case 'WorkloadEntry':
      return fc.constantFrom(0, 65536, -5).map((p) => invalid(o, `port ${p}`, 'spec.ports', { ...c, spec: { ...s, ports: { http: p } } }));
    case 'Gateway':
      return fc.constantFrom(0, 65536).map((p) =>
        invalid(o, `port ${p}`, 'spec.servers[0].port', {
          ...c,
          spec: { ...s, servers: [{ port: { number: p, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }] },
        }),
      );
    case 'PeerAuthentication':
      return fc.constant(invalid(o, 'unknown mode', 'spec.mtls.mode', { ...c, spec: { mtls: { mode: 'SOMETIMES' } } }));
    case 'AuthorizationPolicy':
      return fc.constant(invalid(o, 'unknown action', 'spec.action', { ...c, spec: { ...s, action: 'MAYBE' } }));
    case 'Sidecar':
      return fc.constant(invalid(o, 'egress without hosts', 'spec.egress[0].hosts', { ...c, spec: { ...s, egress: [{ hosts: [] }] } }));
    default:
      return fc.constant(invalid(o, 'spec a string', 'spec', { ...c, spec: 'x' }));
  }
}

/**
 * Breakage that keeps the object's identity (kind, apiVersion, namespace/name), so it can be an
 * update of a good object: what an API server's CRD schema lets through to our validation.
 */
export function invalidUpdate(o: FuzzObject): fc.Arbitrary<PlannedDoc> {
  const m = (i: number): fc.Arbitrary<PlannedDoc> => (MUTATORS[i] as Mutator)(o);
  const protoInSpec = m(6).filter((d) => d.expect.kind === 'invalid' && d.expect.path.startsWith('spec'));
  return fc.oneof(
    { weight: 1, arbitrary: m(0) },
    { weight: 1, arbitrary: m(1) },
    { weight: 1, arbitrary: protoInSpec },
    { weight: 5, arbitrary: kindSpecific(o) },
  );
}

/** A valid object broken in one way validation must reject. */
export const invalidDoc = (): fc.Arbitrary<PlannedDoc> =>
  fc.tuple(validObject(), fc.nat(MUTATORS.length - 1)).chain(([o, i]) => (MUTATORS[i] ?? (MUTATORS[0] as Mutator))(o));

/** Documents that are not (our) objects at all: other kinds, scalars, lists, nulls. */
export const foreignDoc = (): fc.Arbitrary<PlannedDoc> =>
  fc.oneof(
    fc.constant({
      value: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc' }, spec: { ports: [{ port: 80 }] } },
      expect: { kind: 'any', mutation: 'Kubernetes Service' },
    } as PlannedDoc),
    fc.constant({
      value: { kind: 'VirtualService', metadata: { name: 'no-api' } },
      expect: { kind: 'any', mutation: 'no apiVersion' },
    } as PlannedDoc),
    fc.constant({
      value: { apiVersion: 'networking.istio.io/v1', metadata: { name: 'no-kind' }, spec: {} },
      expect: { kind: 'any', mutation: 'no kind' },
    } as PlannedDoc),
    fc.jsonValue({ maxDepth: 3 }).map((v): PlannedDoc => ({ value: v, expect: { kind: 'any', mutation: 'random JSON value' } })),
  );

export const validDoc = (): fc.Arbitrary<PlannedDoc> =>
  validObject().map((o) => ({ value: o, expect: { kind: 'valid', key: keyOfObject(o), object: o } }));

/** How a whole file is corrupted (after serialising its documents). */
export type FileCorruption =
  | 'none'
  /** Must fail the file: a syntax error, a limit crossed. */
  | 'syntax'
  | 'alias-bomb'
  | 'deep-nesting'
  | 'oversize'
  /** May or may not still parse. */
  | 'non-utf8'
  | 'truncated'
  | 'bulk'
  | 'exotic';

export interface FuzzFile {
  readonly name: string;
  readonly bytes: Buffer;
  readonly docs: readonly PlannedDoc[];
  readonly corruption: FileCorruption;
}

/** Must the whole file be rejected? */
export const breaksFile = (c: FileCorruption): boolean => c === 'syntax' || c === 'alias-bomb' || c === 'deep-nesting' || c === 'oversize';

function serialize(docs: readonly PlannedDoc[], json: boolean): string {
  if (json)
    return JSON.stringify(
      docs.length === 1 ? docs[0]?.value : { apiVersion: 'v1', kind: 'List', items: docs.map((d) => d.value) },
      undefined,
      1,
    );
  return docs.map((d) => stringify(d.value, { lineWidth: 0 })).join('---\n');
}

/** YAML that is legal but unusual: tags, merge keys, complex keys, self-reference, special floats. */
export const EXOTIC_YAML = [
  'apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: self}\nspec: &a {hosts: [x], http: *a}\n',
  'apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: !!binary aGVsbG8=}\nspec: {hosts: !!set {a.b}}\n',
  'apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: merge}\nspec: {<<: [{hosts: [a.b]}], http: []}\n',
  'apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: complex}\nspec: {? [a, b] : c}\n',
  'apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: nan}\nspec: {hosts: [a.b], ports: [{number: .nan, name: http}, {number: .inf, name: h2}, {number: 123456789012345678901234567890, name: h3}]}\n',
  'apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: 2001-12-14, namespace: ~}\nspec: {hosts: [~], http: [~]}\n',
  'apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: !local tagged}\nspec: {hosts: ["\\ud800"], http: [{timeout: 99999999999999999999s}]}\n',
  '%YAML 1.1\n---\napiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: y11, labels: {on: yes}}\nspec: {hosts: [a.b]}\n',
  'apiVersion: 1\nkind: [VirtualService]\nmetadata: 1\n',
] as const;

/** A YAML document whose aliases expand exponentially (billion laughs). */
export function aliasBomb(levels: number): string {
  const lines = [
    'apiVersion: networking.istio.io/v1',
    'kind: VirtualService',
    'metadata: {name: bomb}',
    'spec:',
    '  a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  ];
  for (let i = 1; i < levels; i++) lines.push(`  a${i}: &a${i} [${Array.from({ length: 9 }, () => `*a${i - 1}`).join(',')}]`);
  return `${lines.join('\n')}\n`;
}

/** Nesting `depth` levels deep, in flow (`[[[…]]]`) or block style. */
export function deepNesting(depth: number, style: 'flow' | 'block'): string {
  if (style === 'flow')
    return `apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: deep}\nspec:\n  hosts: ${'['.repeat(depth)}${']'.repeat(depth)}\n`;
  const out = ['apiVersion: networking.istio.io/v1', 'kind: VirtualService', 'metadata: {name: deep}', 'spec:'];
  for (let i = 1; i <= depth; i++) out.push(`${' '.repeat(i)}k${i}:`);
  return `${out.join('\n')} x\n`;
}

/** Sizes of the multi-MB files, in bytes: under and over the default 8 MiB limit. */
export const BULK_SIZES = [2 * 1024 * 1024, 9 * 1024 * 1024] as const;

/** One VirtualService with a multi-MB string: valid YAML, invalid object (the header value is too long a host). */
function bulkText(bytes: number): string {
  return `apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: bulk}\nspec:\n  hosts: ["${'h'.repeat(bytes)}"]\n`;
}

const corruptions = (allowBulk: boolean): fc.Arbitrary<FileCorruption> =>
  fc.oneof(
    // Multi-MB files cost ~0.3 s each: about one case in a hundred.
    { weight: 80, arbitrary: fc.constant<FileCorruption>('none') },
    { weight: 16, arbitrary: fc.constantFrom<FileCorruption>('syntax', 'non-utf8', 'truncated', 'exotic') },
    { weight: 8, arbitrary: fc.constantFrom<FileCorruption>('alias-bomb', 'deep-nesting') },
    { weight: allowBulk ? 1 : 0, arbitrary: fc.constantFrom<FileCorruption>('bulk', 'oversize') },
  );

export interface FuzzFileOptions {
  /** Allow multi-MB files (a few hundred ms each). */
  readonly bulk?: boolean;
  /** Documents per file (default 1–6). */
  readonly maxDocs?: number;
  /** File name without extension (default `f`). */
  readonly stem?: string;
}

/** A config file of valid, invalid and foreign documents, possibly corrupted as a whole. */
export function fuzzFile(opts: FuzzFileOptions = {}): fc.Arbitrary<FuzzFile> {
  return fuzzFileRaw(opts).map(printable);
}

/** Counterexamples print as a summary plus the text (fast-check's toStringMethod), not as byte arrays. */
function printable(f: FuzzFile): FuzzFile {
  const text = f.bytes.length > 4000 ? `${f.bytes.subarray(0, 2000).toString('utf8')}…(${f.bytes.length} bytes)` : f.bytes.toString('utf8');
  return Object.assign(f, { [fc.toStringMethod]: () => `${describeFile(f)}\n${text}` });
}

function fuzzFileRaw(opts: FuzzFileOptions): fc.Arbitrary<FuzzFile> {
  const doc = fc.oneof(
    { weight: 5, arbitrary: validDoc() },
    { weight: 4, arbitrary: invalidDoc() },
    { weight: 1, arbitrary: foreignDoc() },
  );
  return fc
    .record({
      json: fc.boolean(),
      docs: fc.array(doc, { minLength: 1, maxLength: opts.maxDocs ?? 6 }),
      corruption: corruptions(opts.bulk ?? true),
      at: fc.double({ min: 0, max: 1, noNaN: true }),
      bad: fc.constantFrom(Buffer.from([0xff, 0xfe]), Buffer.from([0xc3, 0x28]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0x00])),
      depth: fc.integer({ min: 101, max: 100_000 }),
      levels: fc.integer({ min: 4, max: 12 }),
      bulkAt: fc.constantFrom(...BULK_SIZES),
      exotic: fc.constantFrom(...EXOTIC_YAML),
    })
    .map(({ json, docs, corruption, at, bad, depth, levels, bulkAt, exotic }): FuzzFile => {
      const name = `${opts.stem ?? 'f'}.${json ? 'json' : 'yaml'}`;
      const text = serialize(docs, json);
      const cut = Math.floor(at * text.length);
      switch (corruption) {
        case 'none':
          return { name, bytes: Buffer.from(text), docs, corruption };
        case 'syntax':
          // An unterminated flow sequence (YAML) or a missing closing brace (JSON) is always an error.
          return {
            name,
            bytes: Buffer.from(json ? text.slice(0, text.lastIndexOf('}')) : `${text}\n---\nbroken: [unclosed, list\n`),
            docs,
            corruption,
          };
        case 'truncated':
          return { name, bytes: Buffer.from(text.slice(0, cut)), docs, corruption };
        case 'non-utf8': {
          const b = Buffer.from(text);
          const i = Math.floor(at * b.length);
          return { name, bytes: Buffer.concat([b.subarray(0, i), bad, b.subarray(i)]), docs, corruption };
        }
        case 'exotic':
          return { name: `${opts.stem ?? 'f'}.yaml`, bytes: Buffer.from(`${serialize(docs, false)}---\n${exotic}`), docs, corruption };
        case 'alias-bomb':
          return {
            name: `${opts.stem ?? 'f'}.yaml`,
            bytes: Buffer.from(`${serialize(docs, false)}---\n${aliasBomb(levels)}`),
            docs,
            corruption,
          };
        case 'deep-nesting':
          return {
            name: `${opts.stem ?? 'f'}.yaml`,
            bytes: Buffer.from(
              `${serialize(docs, false)}---\n${at < 0.5 ? deepNesting(Math.min(depth, 20_000), 'flow') : deepNesting(Math.min(depth, 2_000), 'block')}`,
            ),
            docs,
            corruption,
          };
        case 'oversize':
          return {
            name: `${opts.stem ?? 'f'}.yaml`,
            bytes: Buffer.from(`${serialize(docs, false)}---\n${bulkText(BULK_SIZES[1])}`),
            docs,
            corruption,
          };
        case 'bulk':
          return {
            name: `${opts.stem ?? 'f'}.yaml`,
            bytes: Buffer.from(`${serialize(docs, false)}---\n${bulkText(bulkAt === BULK_SIZES[1] ? BULK_SIZES[0] : bulkAt)}`),
            docs,
            corruption,
          };
      }
    });
}

/** A short label of a file for counterexample output. */
export function describeFile(f: FuzzFile): string {
  return `${f.name} [${f.corruption}] ${f.bytes.length} bytes: ${f.docs.map((d) => (d.expect.kind === 'valid' ? `valid ${d.expect.key}` : d.expect.kind === 'invalid' ? `invalid(${d.expect.mutation}) ${d.expect.key}` : `any(${d.expect.mutation})`)).join('; ')}`;
}
