/**
 * fast-check arbitraries of Istio objects that meshpilot's validation accepts (and istiod's
 * would): a handful of shapes per kind, varied in names, hosts, ports, weights and matches. The
 * mutations in config-mutations.ts break them in known ways.
 */
import fc from 'fast-check';

/** A plain JSON-ish Kubernetes object (what a YAML document decodes to). */
export interface FuzzObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec: Record<string, unknown>;
}

export type FuzzKind =
  | 'ServiceEntry'
  | 'WorkloadEntry'
  | 'VirtualService'
  | 'DestinationRule'
  | 'Gateway'
  | 'Sidecar'
  | 'AuthorizationPolicy'
  | 'PeerAuthentication';

export const NAMESPACES = ['default', 'prod', 'team-a'] as const;

/** A lowercase RFC 1123 label, 1–12 characters. */
export const dnsLabel = (): fc.Arbitrary<string> => (LABEL ??= fc.stringMatching(/^[a-z]([a-z0-9-]{0,10}[a-z0-9])?$/));
// Built once: stringMatching compiles its regex into an arbitrary, too slow to redo per case.
let LABEL: fc.Arbitrary<string> | undefined;

const host = (): fc.Arbitrary<string> =>
  fc.tuple(dnsLabel(), fc.constantFrom(...NAMESPACES)).map(([n, ns]) => `${n}.${ns}.svc.cluster.local`);
const port = (): fc.Arbitrary<number> => fc.integer({ min: 1, max: 65535 });
const ip = (): fc.Arbitrary<string> =>
  fc.tuple(fc.integer({ min: 1, max: 223 }), fc.nat(255), fc.nat(255), fc.integer({ min: 1, max: 254 })).map((p) => p.join('.'));
const labels = (): fc.Arbitrary<Record<string, string>> => fc.dictionary(dnsLabel(), dnsLabel(), { minKeys: 1, maxKeys: 3 });
// HTTP family only: a ServiceEntry with several hosts may not use TCP ports.
const protocol = (): fc.Arbitrary<string> => fc.constantFrom('HTTP', 'HTTP2', 'GRPC');

/** RE2 patterns that compile (no lookaround, no backreferences). */
export const validRegex = (): fc.Arbitrary<string> =>
  fc.constantFrom('/api/v[0-9]+/.*', '^/users/[a-z]+$', '.*\\.(png|jpg)', '/(a|b)c{1,3}', '[[:alpha:]]+', '(?i)/Login');

const stringMatch = (): fc.Arbitrary<Record<string, string>> =>
  fc.oneof(
    fc.stringMatching(/^\/[a-z0-9/]{0,12}$/).map((p) => ({ prefix: p })),
    fc.stringMatching(/^\/[a-z0-9/]{1,12}$/).map((p) => ({ exact: p })),
    validRegex().map((r) => ({ regex: r })),
  );

const destination = (h: string): fc.Arbitrary<Record<string, unknown>> =>
  fc
    .record({ subset: fc.option(dnsLabel(), { nil: undefined }), number: fc.option(port(), { nil: undefined }) })
    .map(({ subset, number }) => ({
      host: h,
      ...(subset !== undefined ? { subset } : {}),
      ...(number !== undefined ? { port: { number } } : {}),
    }));

function meta(kind: FuzzKind, apiVersion: string, name: string, namespace: string, spec: Record<string, unknown>): FuzzObject {
  return { apiVersion, kind, metadata: { name, namespace }, spec };
}

const NET = fc.constantFrom('networking.istio.io/v1', 'networking.istio.io/v1beta1', 'networking.istio.io/v1alpha3');
const SEC = fc.constantFrom('security.istio.io/v1', 'security.istio.io/v1beta1');

const serviceEntry = (name: string, ns: string): fc.Arbitrary<FuzzObject> =>
  fc
    .record({
      api: NET,
      hosts: fc.uniqueArray(host(), { minLength: 1, maxLength: 3 }),
      ports: fc.uniqueArray(port(), { minLength: 1, maxLength: 3 }),
      proto: protocol(),
      sel: labels(),
    })
    .map(({ api, hosts, ports, proto, sel }) =>
      meta('ServiceEntry', api, name, ns, {
        hosts,
        location: 'MESH_INTERNAL',
        resolution: 'STATIC',
        ports: ports.map((p, i) => ({ number: p, name: `${proto.toLowerCase()}-${i}`, protocol: proto })),
        workloadSelector: { labels: sel },
      }),
    );

const workloadEntry = (name: string, ns: string): fc.Arbitrary<FuzzObject> =>
  fc
    .record({ api: NET, address: ip(), l: labels(), p: port() })
    .map(({ api, address, l, p }) => meta('WorkloadEntry', api, name, ns, { address, labels: l, ports: { http: p } }));

const httpRoute = (h: string): fc.Arbitrary<Record<string, unknown>> =>
  fc
    .record({
      match: fc.option(
        fc.array(
          stringMatch().map((uri) => ({ uri })),
          { minLength: 1, maxLength: 2 },
        ),
        { nil: undefined },
      ),
      dests: fc.array(destination(h), { minLength: 1, maxLength: 3 }),
      weights: fc.array(fc.integer({ min: 1, max: 100 }), { minLength: 3, maxLength: 3 }),
      timeout: fc.option(fc.constantFrom('1s', '250ms', '1m'), { nil: undefined }),
    })
    .map(({ match, dests, weights, timeout }) => ({
      ...(match ? { match } : {}),
      route: dests.map((d, i) => (dests.length > 1 ? { destination: d, weight: weights[i] ?? 1 } : { destination: d })),
      ...(timeout ? { timeout } : {}),
    }));

const HOST_PLACEHOLDER = '$host';
const withHost = (v: unknown, h: string): unknown => JSON.parse(JSON.stringify(v).split(HOST_PLACEHOLDER).join(h));

const virtualService = (name: string, ns: string): fc.Arbitrary<FuzzObject> =>
  fc
    .record({ api: NET, h: host(), http: fc.array(httpRoute(HOST_PLACEHOLDER), { minLength: 1, maxLength: 3 }) })
    .map(({ api, h, http }) => meta('VirtualService', api, name, ns, { hosts: [h], http: withHost(http, h) }));

const destinationRule = (name: string, ns: string): fc.Arbitrary<FuzzObject> =>
  fc
    .record({
      api: NET,
      h: host(),
      subsets: fc.uniqueArray(dnsLabel(), { minLength: 0, maxLength: 3 }),
      lb: fc.constantFrom('ROUND_ROBIN', 'LEAST_REQUEST', 'RANDOM'),
      maxConn: fc.integer({ min: 1, max: 10_000 }),
    })
    .map(({ api, h, subsets, lb, maxConn }) =>
      meta('DestinationRule', api, name, ns, {
        host: h,
        trafficPolicy: { loadBalancer: { simple: lb }, connectionPool: { tcp: { maxConnections: maxConn } } },
        subsets: subsets.map((s) => ({ name: s, labels: { version: s } })),
      }),
    );

const gateway = (name: string, ns: string): fc.Arbitrary<FuzzObject> =>
  fc.record({ api: NET, p: port(), hosts: fc.uniqueArray(host(), { minLength: 1, maxLength: 2 }) }).map(({ api, p, hosts }) =>
    meta('Gateway', api, name, ns, {
      selector: { istio: 'ingressgateway' },
      servers: [{ port: { number: p, name: 'http', protocol: 'HTTP' }, hosts }],
    }),
  );

const sidecar = (name: string, ns: string): fc.Arbitrary<FuzzObject> =>
  fc
    .record({ api: NET, l: labels() })
    .map(({ api, l }) =>
      meta('Sidecar', api, name, ns, { workloadSelector: { labels: l }, egress: [{ hosts: ['./*', 'istio-system/*'] }] }),
    );

const authorizationPolicy = (name: string, ns: string): fc.Arbitrary<FuzzObject> =>
  fc
    .record({
      api: SEC,
      action: fc.constantFrom('ALLOW', 'DENY'),
      paths: fc.array(fc.stringMatching(/^\/[a-z]{0,8}\*?$/), { minLength: 1, maxLength: 3 }),
      l: labels(),
    })
    .map(({ api, action, paths, l }) =>
      meta('AuthorizationPolicy', api, name, ns, {
        selector: { matchLabels: l },
        action,
        rules: [{ to: [{ operation: { paths, methods: ['GET'] } }] }],
      }),
    );

const peerAuthentication = (name: string, ns: string): fc.Arbitrary<FuzzObject> =>
  fc
    .record({ api: SEC, mode: fc.constantFrom('STRICT', 'PERMISSIVE', 'DISABLE') })
    .map(({ api, mode }) => meta('PeerAuthentication', api, name, ns, { mtls: { mode } }));

const BY_KIND: Record<FuzzKind, (name: string, ns: string) => fc.Arbitrary<FuzzObject>> = {
  ServiceEntry: serviceEntry,
  WorkloadEntry: workloadEntry,
  VirtualService: virtualService,
  DestinationRule: destinationRule,
  Gateway: gateway,
  Sidecar: sidecar,
  AuthorizationPolicy: authorizationPolicy,
  PeerAuthentication: peerAuthentication,
};

export const FUZZ_KINDS = Object.keys(BY_KIND) as FuzzKind[];

/** One valid object of `kind` (any kind when omitted) named `name` in `namespace`. */
export function validObject(opts: { name?: string; namespace?: string; kind?: FuzzKind } = {}): fc.Arbitrary<FuzzObject> {
  return fc
    .record({
      kind: opts.kind ? fc.constant(opts.kind) : fc.constantFrom(...FUZZ_KINDS),
      name: opts.name ? fc.constant(opts.name) : dnsLabel(),
      ns: opts.namespace ? fc.constant(opts.namespace) : fc.constantFrom(...NAMESPACES),
    })
    .chain(({ kind, name, ns }) => byKind(kind, name, ns));
}

// Arbitraries per kind are built once and renamed per case (building them is the costly part).
const templates = new Map<FuzzKind, fc.Arbitrary<FuzzObject>>();
function byKind(kind: FuzzKind, name: string, namespace: string): fc.Arbitrary<FuzzObject> {
  let t = templates.get(kind);
  if (!t) templates.set(kind, (t = BY_KIND[kind]('template', 'default')));
  return t.map((o) => ({ ...o, metadata: { ...o.metadata, name, namespace } }));
}

/** `Kind/namespace/name` of an object, as configKeyString writes it. */
export const keyOfObject = (o: FuzzObject): string => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`;

/** Two files' worth of objects where some keys appear in both (with independently generated content). */
export function overlappingObjects(): fc.Arbitrary<{ first: FuzzObject[]; second: FuzzObject[] }> {
  const unique = (objs: FuzzObject[]): FuzzObject[] => [...new Map(objs.map((o) => [keyOfObject(o), o])).values()];
  return fc
    .record({
      first: fc.array(validObject(), { minLength: 1, maxLength: 5 }),
      extra: fc.array(validObject(), { maxLength: 3 }),
      shared: fc.array(fc.nat(), { minLength: 1, maxLength: 5 }),
    })
    .chain(({ first, extra, shared }) => {
      const a = unique(first);
      const picked = unique(shared.map((i) => a[i % a.length] as FuzzObject));
      // The shared keys again, with other content of the same kind.
      return fc
        .tuple(...picked.map((o) => validObject({ kind: o.kind as FuzzKind, name: o.metadata.name, namespace: o.metadata.namespace })))
        .map((again) => ({
          first: a,
          second: unique([...again, ...extra]),
        }));
    });
}
