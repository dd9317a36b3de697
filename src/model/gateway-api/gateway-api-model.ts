/**
 * Gateway API for gateways, end to end: Gateways of class `istio` → internal Istio Gateways,
 * routes with Gateway parents → VirtualServices bound to them (what the PushContext indexes beside
 * the user's Istio config), and the status istiod writes for every object it owns — GatewayClass
 * Accepted; Gateway Accepted/Programmed/ResolvedRefs with addresses and listener conditions
 * (attachedRoutes counted from the routes); route parents Accepted/ResolvedRefs — all pure
 * functions of the config snapshot (and, for status, the service registry).
 */
import { type Config, specJson, type GatewayClassSpec, type GatewaySpec, type KindName, type ConfigSnapshot } from '../../config/index.js';
import { parseKubernetesSecret } from '../kubernetes-secret.js';
import { toJson } from '@bufbuild/protobuf';
import { StructSchema } from '@bufbuild/protobuf/wkt';
import type { RegistrySnapshot } from '../../registry/index.js';
import {
  humanReadableJoin,
  ISTIO_GATEWAY_CONTROLLER,
  ISTIO_MESH_CONTROLLER,
  renderConditions,
  type ConditionDraft,
  type GatewayStatusAddress,
  type ObjectStatus,
} from './conditions.js';
import { byNamespaceName } from '../indexes/config-order.js';
import { convertRoutes, type AnyRoute, type RouteResult } from './gateway-api-routes.js';
import { convertGateways, type ConvertedGateway, type ListenerParent, type SecretCheck } from './kube-gateways.js';
import { ReferenceGrants } from './reference-grants.js';

/** Every kind the gateway translation reads (a change to any rebuilds it). */
export const GATEWAY_API_MODEL_KINDS: readonly KindName[] = [
  'GatewayClass',
  'KubernetesGateway',
  'HTTPRoute',
  'GRPCRoute',
  'TCPRoute',
  'TLSRoute',
  'ReferenceGrant',
];

export interface GatewayApiConfig {
  /** Internal Istio Gateways, one per listener. */
  readonly gateways: readonly Config<'Gateway'>[];
  /** VirtualServices bound to them. */
  readonly virtualServices: readonly Config<'VirtualService'>[];
}

interface Environment {
  readonly domain: string;
  readonly serviceExists: (namespace: string, name: string) => boolean;
  readonly checkSecret: SecretCheck;
}

interface Analysis {
  readonly gateways: readonly ConvertedGateway[];
  readonly routes: RouteResult;
}

const ROUTE_KINDS = ['HTTPRoute', 'GRPCRoute', 'TCPRoute', 'TLSRoute'] as const;

function analyse(snapshot: ConfigSnapshot, env: Environment): Analysis {
  const grants = new ReferenceGrants(snapshot.list('ReferenceGrant'));
  const namespaces = [...new Set(KIND_NAMESPACES(snapshot))];
  const gateways = convertGateways({ snapshot, domain: env.domain, grants, checkSecret: env.checkSecret, namespaces });
  const listenersByGateway = new Map<string, readonly ListenerParent[]>(
    gateways.map((g) => [`${g.config.meta.namespace}/${g.config.meta.name}`, g.parents]),
  );
  const routes: AnyRoute[] = ROUTE_KINDS.flatMap((k) => snapshot.list(k) as AnyRoute[]);
  const result = convertRoutes(routes, {
    domain: env.domain,
    listenersByGateway,
    rule: { domain: env.domain, grants, serviceExists: env.serviceExists },
  });
  return { gateways, routes: result };
}

/** Namespaces of every Gateway API object in the snapshot (what allowedRoutes selectors can pick). */
function KIND_NAMESPACES(snapshot: ConfigSnapshot): string[] {
  return GATEWAY_API_MODEL_KINDS.flatMap((k) => [...snapshot.byKind(k).values()].map((c) => c.meta.namespace)).filter((n) => n !== '');
}

/**
 * The internal Gateways and VirtualServices (config only: backends and Secrets are not looked up
 * here, they only change status, except where istiod drops a reference — ReferenceGrants).
 */
export function gatewayApiConfig(snapshot: ConfigSnapshot, domain: string): GatewayApiConfig {
  if (GATEWAY_API_MODEL_KINDS.every((k) => k === 'ReferenceGrant' || snapshot.byKind(k).size === 0))
    return { gateways: [], virtualServices: [] };
  const a = analyse(snapshot, { domain, serviceExists: () => true, checkSecret: () => undefined });
  return { gateways: a.gateways.flatMap((g) => g.internal), virtualServices: a.routes.virtualServices };
}

export interface StatusOptions {
  readonly domain: string;
  readonly registry: RegistrySnapshot;
  /**
   * Whether the snapshot holds the cluster's Secrets (the config directory does; on a cluster they
   * are not watched, so certificateRefs are not checked for existence).
   */
  readonly secretsInConfig: boolean;
}

function secretChecker(snapshot: ConfigSnapshot, known: boolean): SecretCheck {
  if (!known) return () => undefined;
  return (namespace, name) => {
    const s = snapshot.get('Secret', namespace, name);
    if (!s) return `secret ${namespace}/${name} not found`;
    const parsed = parseKubernetesSecret({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace },
      ...(toJson(StructSchema, s.spec) as object),
    });
    return parsed.ok && parsed.value.credential.certChain !== ''
      ? undefined
      : `the certificate is malformed: ${parsed.ok ? 'no certificate' : parsed.errors.join('; ')}`;
  };
}

/** The status of every GatewayClass, Gateway and route meshpilot owns, in kind then namespace/name order. */
export function gatewayApiStatus(snapshot: ConfigSnapshot, opts: StatusOptions): ObjectStatus[] {
  const serviceExists = (ns: string, name: string): boolean =>
    opts.registry.serviceByHost(`${name}.${ns}.svc.${opts.domain}`, ns)?.namespace === ns;
  const a = analyse(snapshot, { domain: opts.domain, serviceExists, checkSecret: secretChecker(snapshot, opts.secretsInConfig) });
  const out: ObjectStatus[] = [];
  // Ours: classes naming our controller, and the built-in `istio` (istiod creates it on a cluster).
  const ours = new Set([ISTIO_GATEWAY_CONTROLLER, ISTIO_MESH_CONTROLLER]);
  const classes = new Set(
    [...snapshot.byKind('GatewayClass').values()]
      .filter((c) => ours.has(specJson<GatewayClassSpec>(c.spec).controllerName))
      .map((c) => c.meta.name),
  );
  const declared = new Set([...snapshot.byKind('GatewayClass').values()].map((c) => c.meta.name));
  const used = new Set([...snapshot.byKind('KubernetesGateway').values()].map((g) => specJson<GatewaySpec>(g.spec).gatewayClassName));
  if (snapshot.byKind('KubernetesGateway').size > 0 && !declared.has('istio')) classes.add('istio');
  // The waypoint class only when a Gateway uses it (istiod creates it with ambient on).
  if (used.has('istio-waypoint') && !declared.has('istio-waypoint')) classes.add('istio-waypoint');
  for (const name of [...classes].sort()) {
    out.push({
      kind: 'GatewayClass',
      name,
      namespace: '',
      status: { conditions: renderConditions({ Accepted: { reason: 'Accepted', message: 'Handled by Istio controller' } }) },
    });
  }
  for (const g of a.gateways) out.push(gatewayStatus(g, a.routes.attachments, opts));
  for (const kind of ROUTE_KINDS) {
    for (const r of [...snapshot.byKind(kind).values()].sort(byNamespaceName)) {
      const parents = a.routes.statuses.get(`${kind}/${r.meta.namespace}/${r.meta.name}`) ?? [];
      if (parents.length > 0) out.push({ kind, name: r.meta.name, namespace: r.meta.namespace, status: { parents } });
    }
  }
  return out;
}

/** istiod's ResolveGatewayInstances: internal `host:port`s with endpoints, their addresses, and warnings. */
function resolveInstances(
  g: ConvertedGateway,
  opts: StatusOptions,
): { internal: string[]; internalIps: string[]; warnings: string[]; usable: boolean } {
  const internal = new Set<string>();
  const internalIps = new Set<string>();
  const warnings: string[] = [];
  let usable = true;
  const ns = g.config.meta.namespace;
  for (const host of g.gatewayServices) {
    const svc = opts.registry.serviceByHost(host, ns);
    if (!svc || svc.namespace !== ns) {
      const other = opts.registry.services
        .filter((s) => s.hostname === host && s.namespace !== ns)
        .map((s) => `"${s.namespace}"`)
        .sort();
      warnings.push(
        other.length > 0
          ? `hostname "${host}" not found in namespace "${ns}", but it was found in namespace(s) ${other.join(', ')}`
          : `hostname "${host}" not found`,
      );
      usable = false;
      continue;
    }
    for (const port of new Set(g.serverPorts)) {
      if (opts.registry.endpoints(host, port, ns).length > 0) {
        internal.add(`${host}:${port}`);
        for (const ip of svc.addresses) internalIps.add(ip);
      } else if (svc.ports.every((p) => opts.registry.endpoints(host, p.port, ns).length === 0)) {
        warnings.push(`no instances found for hostname "${host}"`);
      } else {
        const hint = svc.ports
          .filter((p) => opts.registry.endpoints(host, p.port, ns).some((e) => e.port === port))
          .map((p) => String(p.port));
        if (hint.length > 0)
          warnings.push(
            `port ${port} not found for hostname "${host}" (hint: the service port should be specified, not the workload port. Did you mean one of these ports: [${hint.sort().join(' ')}]?)`,
          );
        else if (!svc.ports.some((p) => p.port === port)) warnings.push(`port ${port} not found for hostname "${host}"`);
        else continue;
        usable = false;
      }
    }
  }
  return { internal: [...internal].sort(), internalIps: [...internalIps].sort(), warnings: warnings.sort(), usable };
}

function gatewayStatus(g: ConvertedGateway, attachments: ReadonlyMap<string, number>, opts: StatusOptions): ObjectStatus {
  const { internal, internalIps, warnings, usable } = resolveInstances(g, opts);
  const conds: Record<string, ConditionDraft> = {
    Accepted: { reason: 'Accepted', message: 'Resource accepted' },
    Programmed: { reason: 'Programmed', message: 'Resource programmed' },
    ResolvedRefs: { reason: 'ResolvedRefs', message: 'All references resolved' },
  };
  const total = g.spec.listeners?.length ?? 0;
  if (g.gatewayError) conds.Accepted!.error = g.gatewayError;
  else if (total > 0 && g.validListeners < total) {
    if (g.validListeners === 0)
      conds.Accepted!.error = { reason: 'ListenersNotValid', message: "None of the Gateway's listeners are valid" };
    else Object.assign(conds.Accepted!, { reason: 'ListenersNotValid', message: "One or more of the Gateway's listeners are invalid" });
  }
  const programmed = conds.Programmed!;
  if (internal.length > 0) programmed.message = `Resource programmed, assigned to service(s) ${humanReadableJoin(internal)}`;
  if (g.gatewayServices.length === 0)
    programmed.error = { reason: 'UnsupportedAddress', message: 'Failed to assign to any requested addresses' };
  else if (warnings.length > 0) {
    const message =
      internal.length > 0
        ? `Assigned to service(s) ${humanReadableJoin(internal)}, but failed to assign to all requested addresses: ${warnings.join('; ')}`
        : `Failed to assign to any requested addresses: ${warnings.join('; ')}`;
    programmed.error = { reason: usable ? 'AddressNotAssigned' : 'AddressNotUsable', message };
  }
  // The `istio` class reports Hostname addresses: the internal service hosts (ClusterIP services
  // have no external address); a waypoint reports its Service's IPs first, then the hostnames.
  const hosts = [...new Set(internal.map((hp) => hp.slice(0, hp.lastIndexOf(':'))))];
  const addresses: GatewayStatusAddress[] = [
    ...(g.addressType === 'IPAndHostname' ? internalIps.map((value) => ({ type: 'IPAddress' as const, value })) : []),
    ...hosts.map((value) => ({ type: 'Hostname' as const, value })),
  ];
  const listeners = g.listeners.map((l) => ({
    name: l.listener.name,
    attachedRoutes: attachments.get(`${g.config.meta.namespace}/${g.config.meta.name}/${l.listener.name}`) ?? 0,
    supportedKinds: l.supportedKinds,
    conditions: renderConditions(l.conditions),
  }));
  return {
    kind: 'Gateway',
    name: g.config.meta.name,
    namespace: g.config.meta.namespace,
    status: { addresses, conditions: renderConditions(conds), listeners },
  };
}
