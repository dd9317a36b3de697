import type { ObjectStatus, PushContext } from '../../model/index.js';
import { toJson, type JsonValue } from '@bufbuild/protobuf';
import {
  type Config,
  type ConfigError,
  formatConfigError,
  apiKindOf,
  apiVersionOf,
  KINDS,
  KIND_NAMES,
  type ConfigSnapshot,
} from '../../config/index.js';

/** One stored object as Kubernetes would show it: apiVersion, kind, metadata, proto3-JSON spec. */
export interface ConfigzEntry {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly labels: Readonly<Record<string, string>>;
    readonly annotations: Readonly<Record<string, string>>;
    readonly resourceVersion: string;
    readonly origin?: string;
  };
  readonly spec: JsonValue;
}

function entry(c: Config): ConfigzEntry {
  const info = KINDS[c.meta.kind];
  const origin = c.meta.origin
    ? c.meta.origin.line !== undefined
      ? `${c.meta.origin.file}:${c.meta.origin.line}`
      : c.meta.origin.file
    : undefined;
  return {
    apiVersion: apiVersionOf(info),
    kind: apiKindOf(info),
    metadata: {
      name: c.meta.name,
      namespace: c.meta.namespace,
      labels: c.meta.labels,
      annotations: c.meta.annotations,
      resourceVersion: c.meta.resourceVersion,
      ...(origin !== undefined ? { origin } : {}),
    },
    // The schema of the object's own kind; the union type cannot express that pairing.
    spec:
      c.meta.kind === 'Secret'
        ? redactSecret(c as Config<'Secret'>)
        : toJson(info.schema as typeof KINDS.ServiceEntry.schema, c.spec as Config<'ServiceEntry'>['spec']),
  };
}

/** /debug/configz: every object in the store (kind, namespace, name order) and the current errors. */
export function configz(
  snapshot: ConfigSnapshot,
  errors: ReadonlyMap<string, readonly ConfigError[]>,
  statuses: readonly ObjectStatus[] = [],
): {
  configs: (ConfigzEntry & { status?: unknown })[];
  errors: { source: string; message: string; error: ConfigError }[];
} {
  // Gateway API objects carry the status istiod would write (computed, not stored).
  const statusOf = new Map(
    statuses.map((s) => [`${s.kind === 'Gateway' ? 'KubernetesGateway' : s.kind}/${s.namespace}/${s.name}`, s.status]),
  );
  const configs = KIND_NAMES.flatMap((k) =>
    snapshot.list(k).map((c) => {
      // Others carry the status they were read with (a WorkloadEntry's Healthy condition).
      const status = statusOf.get(`${k}/${c.meta.namespace}/${c.meta.name}`) ?? c.status;
      return status !== undefined ? { ...entry(c), status } : entry(c);
    }),
  );
  const errs = [...errors].flatMap(([source, list]) => list.map((error) => ({ source, message: formatConfigError(error), error })));
  return { configs, errors: errs };
}

/** /debug/registryz: the services of the current PushContext with ports, resolution and endpoint counts. */
export function registryz(push: PushContext): unknown[] {
  return push.registry.services.map((s) => {
    const ports = s.ports.map((p) => ({
      ...p,
      endpoints: push.registry.endpoints(s.hostname, p.port, s.namespace).length,
    }));
    return {
      hostname: s.hostname,
      namespace: s.namespace,
      resolution: s.resolution,
      addresses: s.addresses,
      // A Service of several clusters: each one's addresses (istiod's clusterVIPs).
      ...(s.clusterAddresses ? { clusterVIPs: s.clusterAddresses } : {}),
      ...(s.autoAllocated ? { autoAllocated: s.autoAllocated } : {}),
      meshExternal: s.meshExternal,
      exportTo: s.exportTo,
      source: `${s.source.kind}/${s.source.namespace}/${s.source.name}`,
      ports,
      endpoints: ports.reduce((n, p) => n + p.endpoints, 0),
    };
  });
}

/** Secrets are listed with their keys only: debug output never carries key material. */
function redactSecret(c: Config<'Secret'>): JsonValue {
  const spec = c.spec.fields;
  const keys = (f: string): string[] => {
    const v = spec[f]?.kind;
    return v?.case === 'structValue' ? Object.keys(v.value.fields).sort() : [];
  };
  const type = spec.type?.kind;
  return {
    type: type?.case === 'stringValue' ? type.value : 'Opaque',
    dataKeys: [...new Set([...keys('data'), ...keys('stringData')])].sort(),
    redacted: true,
  };
}
