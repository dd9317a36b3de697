/**
 * Typed views of the Gateway API fields meshpilot translates (gateway.networking.k8s.io v1).
 * Objects are stored as JSON Structs and validated against the vendored CRD schema first, so
 * these views only describe shapes the schema guarantees; optional fields stay optional
 * (defaults are applied where they are used, as the API server would have).
 */

import type { LabelSelector } from '../labels.js';

export interface ParentReference {
  readonly group?: string;
  readonly kind?: string;
  readonly namespace?: string;
  readonly name: string;
  readonly sectionName?: string;
  readonly port?: number;
}

export interface BackendRef {
  readonly group?: string;
  readonly kind?: string;
  readonly namespace?: string;
  readonly name: string;
  readonly port?: number;
  /** Default 1. */
  readonly weight?: number;
  readonly filters?: readonly RouteFilter[];
}

export interface HTTPHeader {
  readonly name: string;
  readonly value: string;
}

export interface HeaderModifier {
  readonly set?: readonly HTTPHeader[];
  readonly add?: readonly HTTPHeader[];
  readonly remove?: readonly string[];
}

export interface PathModifier {
  readonly type: 'ReplaceFullPath' | 'ReplacePrefixMatch';
  readonly replaceFullPath?: string;
  readonly replacePrefixMatch?: string;
}

export interface RouteFilter {
  readonly type:
    'RequestHeaderModifier' | 'ResponseHeaderModifier' | 'RequestRedirect' | 'URLRewrite' | 'RequestMirror' | 'ExtensionRef' | 'CORS';
  readonly requestHeaderModifier?: HeaderModifier;
  readonly responseHeaderModifier?: HeaderModifier;
  readonly requestRedirect?: {
    readonly scheme?: string;
    readonly hostname?: string;
    readonly path?: PathModifier;
    readonly port?: number;
    /** Default 302. */
    readonly statusCode?: number;
  };
  readonly urlRewrite?: { readonly hostname?: string; readonly path?: PathModifier };
  readonly requestMirror?: {
    readonly backendRef: BackendRef;
    readonly percent?: number;
    readonly fraction?: { readonly numerator: number; readonly denominator?: number };
  };
}

export interface HeaderMatch {
  /** Default Exact. */
  readonly type?: 'Exact' | 'RegularExpression';
  readonly name: string;
  readonly value: string;
}

export interface HTTPRouteMatch {
  /** Default `{type: PathPrefix, value: /}`. */
  readonly path?: { readonly type?: 'Exact' | 'PathPrefix' | 'RegularExpression'; readonly value?: string };
  readonly headers?: readonly HeaderMatch[];
  readonly queryParams?: readonly HeaderMatch[];
  readonly method?: string;
}

export interface HTTPRouteRule {
  readonly name?: string;
  readonly matches?: readonly HTTPRouteMatch[];
  readonly filters?: readonly RouteFilter[];
  readonly backendRefs?: readonly BackendRef[];
  readonly timeouts?: { readonly request?: string; readonly backendRequest?: string };
  readonly retry?: { readonly codes?: readonly number[]; readonly attempts?: number; readonly backoff?: string };
}

export interface HTTPRouteSpec {
  readonly parentRefs?: readonly ParentReference[];
  readonly hostnames?: readonly string[];
  readonly rules?: readonly HTTPRouteRule[];
}

export interface GRPCRouteMatch {
  readonly method?: { readonly type?: 'Exact' | 'RegularExpression'; readonly service?: string; readonly method?: string };
  readonly headers?: readonly HeaderMatch[];
}

export interface GRPCRouteRule {
  readonly name?: string;
  readonly matches?: readonly GRPCRouteMatch[];
  readonly filters?: readonly RouteFilter[];
  readonly backendRefs?: readonly BackendRef[];
}

export interface GRPCRouteSpec {
  readonly parentRefs?: readonly ParentReference[];
  readonly hostnames?: readonly string[];
  readonly rules?: readonly GRPCRouteRule[];
}

export interface ReferenceGrantSpec {
  readonly from: readonly { readonly group: string; readonly kind: string; readonly namespace: string }[];
  readonly to: readonly { readonly group: string; readonly kind: string; readonly name?: string }[];
}

/** A TCPRoute/TLSRoute rule: backends only (TLSRoute matches on the route's hostnames). */
export interface L4RouteRule {
  readonly name?: string;
  readonly backendRefs?: readonly BackendRef[];
}

export interface TCPRouteSpec {
  readonly parentRefs?: readonly ParentReference[];
  readonly rules?: readonly L4RouteRule[];
}

export interface TLSRouteSpec {
  readonly parentRefs?: readonly ParentReference[];
  readonly hostnames?: readonly string[];
  readonly rules?: readonly L4RouteRule[];
}

export interface GatewayClassSpec {
  readonly controllerName: string;
}

export interface SecretObjectReference {
  readonly group?: string;
  readonly kind?: string;
  readonly name: string;
  readonly namespace?: string;
}

export interface RouteGroupKind {
  readonly group?: string;
  readonly kind: string;
}

export interface Listener {
  readonly name: string;
  readonly hostname?: string;
  readonly port: number;
  readonly protocol: string;
  readonly tls?: {
    /** Default Terminate. */
    readonly mode?: 'Terminate' | 'Passthrough';
    readonly certificateRefs?: readonly SecretObjectReference[];
    readonly options?: Readonly<Record<string, string>>;
  };
  readonly allowedRoutes?: {
    readonly namespaces?: { readonly from?: 'All' | 'Same' | 'Selector'; readonly selector?: LabelSelector };
    readonly kinds?: readonly RouteGroupKind[];
  };
}

export interface GatewaySpec {
  readonly gatewayClassName: string;
  readonly listeners?: readonly Listener[];
  readonly addresses?: readonly { readonly type?: string; readonly value: string }[];
}
