import { fromJson, type DescMessage, type Message, type Registry } from '@bufbuild/protobuf';
import type { Config } from '../config/index.js';
import { envoyValidationRegistry } from './json-registry.js';
import { BootstrapSchema } from '../gen/envoy/config/bootstrap/v3/bootstrap_pb.js';
import { ClusterSchema } from '../gen/envoy/config/cluster/v3/cluster_pb.js';
import { TypedExtensionConfigSchema } from '../gen/envoy/config/core/v3/extension_pb.js';
import { FilterChainSchema, FilterSchema, ListenerFilterSchema } from '../gen/envoy/config/listener/v3/listener_components_pb.js';
import { ListenerSchema } from '../gen/envoy/config/listener/v3/listener_pb.js';
import { RouteSchema, VirtualHostSchema } from '../gen/envoy/config/route/v3/route_components_pb.js';
import { RouteConfigurationSchema } from '../gen/envoy/config/route/v3/route_pb.js';
import { HttpFilterSchema } from '../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import {
  EnvoyFilter_ApplyTo as ApplyTo,
  EnvoyFilter_Patch_Operation as Op,
  EnvoyFilter_PatchContext as PatchContext,
  type EnvoyFilter_EnvoyConfigObjectMatch as ObjectMatch,
} from '../gen/networking/v1alpha3/envoy_filter_pb.js';
import type { PolicyTargetReference } from '../gen/type/v1beta1/selector_pb.js';

export { ApplyTo, Op, PatchContext };

/** The Envoy message each applyTo's patch value is (istiod's BuildXDSObjectFromStruct). */
export const VALUE_SCHEMA: Readonly<Partial<Record<ApplyTo, DescMessage>>> = {
  [ApplyTo.LISTENER]: ListenerSchema,
  [ApplyTo.FILTER_CHAIN]: FilterChainSchema,
  [ApplyTo.NETWORK_FILTER]: FilterSchema,
  [ApplyTo.HTTP_FILTER]: HttpFilterSchema,
  [ApplyTo.ROUTE_CONFIGURATION]: RouteConfigurationSchema,
  [ApplyTo.VIRTUAL_HOST]: VirtualHostSchema,
  [ApplyTo.HTTP_ROUTE]: RouteSchema,
  [ApplyTo.CLUSTER]: ClusterSchema,
  [ApplyTo.EXTENSION_CONFIG]: TypedExtensionConfigSchema,
  [ApplyTo.BOOTSTRAP]: BootstrapSchema,
  [ApplyTo.LISTENER_FILTER]: ListenerFilterSchema,
};

/** One configPatch, its value decoded once per EnvoyFilter version. */
export interface CompiledPatch {
  /** `namespace/name` of its EnvoyFilter (istiod's patch Key()). */
  readonly key: string;
  readonly applyTo: ApplyTo;
  /** INSERT_* outside listener filters, network/HTTP filters and routes is ADD (as istiod converts). */
  readonly operation: Op;
  readonly match: ObjectMatch | undefined;
  readonly context: PatchContext;
  readonly value: Message | undefined;
  /** Proxy version check: undefined when the patch has none; a bad or huge regex matches nothing. */
  readonly proxyVersion: RegExp | 'never' | undefined;
}

/** An EnvoyFilter ready to select and apply: ordering fields, attachment, compiled patches. */
export interface CompiledEnvoyFilter {
  readonly namespace: string;
  readonly name: string;
  readonly priority: number;
  /** metadata.creationTimestamp in ms, 0 when absent (file objects): then name order decides. */
  readonly created: number;
  readonly selector: Readonly<Record<string, string>> | undefined;
  readonly targetRefs: readonly PolicyTargetReference[];
  readonly patches: readonly CompiledPatch[];
  /** Patches dropped because their value does not decode (each logged once by the index). */
  readonly errors: readonly string[];
  /** Identity of this version (changes with the object): part of patched-resource cache keys. */
  readonly version: string;
}

const MAX_VERSION_REGEX = 1024;
const INSERTABLE = new Set([ApplyTo.HTTP_FILTER, ApplyTo.NETWORK_FILTER, ApplyTo.HTTP_ROUTE, ApplyTo.LISTENER_FILTER]);

function versionMatcher(expr: string): RegExp | 'never' | undefined {
  if (expr === '') return undefined;
  if (expr.length > MAX_VERSION_REGEX) return 'never';
  try {
    // Go's regexp is RE2 (no lookaround); the expressions users write (^1\.2.*) mean the same here.
    return new RegExp(expr);
  } catch {
    return 'never';
  }
}

let registries: { json: Registry; pgv: Registry } | undefined;
/** The Any registry for patch values and the one PGV unpacks with (built once, on first use). */
export function envoyFilterRegistries(): { json: Registry; pgv: Registry } {
  registries ??= { json: envoyValidationRegistry(), pgv: envoyValidationRegistry() };
  return registries;
}

/** Decodes a patch value (proto3 JSON, `@type` Anys through `registry`; unknown fields dropped as istiod's non-strict build). */
export function decodePatchValue(applyTo: ApplyTo, value: unknown, registry: Registry): Message | undefined {
  const schema = VALUE_SCHEMA[applyTo];
  if (!schema || value === undefined) return undefined;
  return fromJson(schema, value as never, { registry, ignoreUnknownFields: true });
}

/** istiod's convertToEnvoyFilterWrapper. `created` comes from the object when the source keeps it. */
export function compileEnvoyFilter(c: Config<'EnvoyFilter'>, registry: Registry, created = 0): CompiledEnvoyFilter {
  const key = `${c.meta.namespace}/${c.meta.name}`;
  const patches: CompiledPatch[] = [];
  const errors: string[] = [];
  c.spec.configPatches.forEach((cp, i) => {
    if (!cp.patch) return;
    let value: Message | undefined;
    try {
      value = decodePatchValue(cp.applyTo, cp.patch.value, registry);
    } catch (err) {
      errors.push(`configPatches[${i}].patch.value: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    const insert =
      cp.patch.operation === Op.INSERT_AFTER || cp.patch.operation === Op.INSERT_BEFORE || cp.patch.operation === Op.INSERT_FIRST;
    patches.push({
      key,
      applyTo: cp.applyTo,
      operation: insert && !INSERTABLE.has(cp.applyTo) ? Op.ADD : cp.patch.operation,
      match: cp.match,
      context: cp.match?.context ?? PatchContext.ANY,
      value,
      proxyVersion: versionMatcher(cp.match?.proxy?.proxyVersion ?? ''),
    });
  });
  return {
    namespace: c.meta.namespace,
    name: c.meta.name,
    priority: c.spec.priority,
    created,
    selector: c.spec.workloadSelector?.labels,
    targetRefs: c.spec.targetRefs,
    patches,
    errors,
    version: `${key}@${c.meta.resourceVersion}`,
  };
}
