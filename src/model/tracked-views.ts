/**
 * Read-through views that record what a cached build reads (see xds-cache.ts): a config snapshot,
 * the security and gateway indexes, and a Sidecar scope. Recording happens at read time, so a value
 * obtained outside a build and read inside it is still accounted to that build.
 */
import type { Config, KindName, ConfigSnapshot, Labels } from '../config/index.js';
import type { XdsCache } from './xds-cache.js';
import { anyOf, namespaceDep } from './dependency-tokens.js';
import type { GatewayIndex } from './indexes/gateway-index.js';
import type {
  AuthorizationPolicySelection,
  EffectiveMtls,
  PeerAuthenticationSelection,
  SecurityPolicyIndex,
} from './indexes/security-index.js';
import type { SidecarScope } from './sidecar-scope.js';

/** A snapshot whose reads record `<Kind>/<ns>/<name>` (get) or `<Kind>@*` (lists). */
export function trackedSnapshot(snapshot: ConfigSnapshot, cache: XdsCache): ConfigSnapshot {
  return {
    byKind<K extends KindName>(kind: K) {
      cache.record(anyOf(kind));
      return snapshot.byKind(kind);
    },
    get<K extends KindName>(kind: K, namespace: string, name: string): Config<K> | undefined {
      cache.record(`${kind}/${namespace}/${name}`);
      return snapshot.get(kind, namespace, name);
    },
    list<K extends KindName>(kind: K, namespace?: string) {
      cache.record(anyOf(kind));
      return snapshot.list(kind, namespace);
    },
  };
}

/** The security index; a workload's policies come from its namespace and the root namespace. */
export class TrackedSecurity {
  constructor(
    private readonly index: SecurityPolicyIndex,
    private readonly rootNamespace: string,
    private readonly cache: XdsCache,
  ) {}

  private read(kind: KindName, namespace: string): void {
    this.cache.record(namespaceDep(kind, namespace));
    this.cache.record(namespaceDep(kind, this.rootNamespace));
  }

  peerAuthentication(namespace: string, labels: Labels): PeerAuthenticationSelection {
    this.read('PeerAuthentication', namespace);
    return this.index.peerAuthentication(namespace, labels);
  }

  effectiveMtls(namespace: string, labels: Labels): EffectiveMtls {
    this.read('PeerAuthentication', namespace);
    return this.index.effectiveMtls(namespace, labels);
  }

  authorizationPolicies(namespace: string, labels: Labels): AuthorizationPolicySelection {
    this.read('AuthorizationPolicy', namespace);
    return this.index.authorizationPolicies(namespace, labels);
  }

  requestAuthentications(namespace: string, labels: Labels): Config<'RequestAuthentication'>[] {
    this.read('RequestAuthentication', namespace);
    return this.index.requestAuthentications(namespace, labels);
  }
}

/** Gateways and their VirtualServices: routers depend on every Gateway and gateway-bound VirtualService. */
export class TrackedGateways {
  constructor(
    /** The untracked index (the next push's incremental build starts from it). */
    readonly index: GatewayIndex,
    private readonly cache: XdsCache,
  ) {}

  forProxy(
    labels: Labels,
    proxy?: { readonly namespace: string; readonly serviceHosts: ReadonlySet<string> },
  ): readonly Config<'Gateway'>[] {
    this.cache.record(anyOf('Gateway'));
    return this.index.forProxy(labels, proxy);
  }

  virtualServicesFor(gateway: string, namespace: string): readonly Config<'VirtualService'>[] {
    this.cache.record(anyOf('VirtualService'));
    return this.index.virtualServicesFor(gateway, namespace);
  }
}

/** A Sidecar scope whose reads record the Sidecar kind and, for its services, the service set. */
export function trackedScope(scope: SidecarScope, cache: XdsCache): SidecarScope {
  const sidecarRead = (): void => cache.record(anyOf('Sidecar'));
  return {
    key: scope.key,
    get sidecar() {
      sidecarRead();
      return scope.sidecar;
    },
    get services() {
      sidecarRead();
      cache.record(anyOf('ServiceEntry'));
      return scope.services;
    },
    get outboundTrafficPolicy() {
      sidecarRead();
      return scope.outboundTrafficPolicy;
    },
    admits(namespace, host) {
      sidecarRead();
      return scope.admits(namespace, host);
    },
  };
}
