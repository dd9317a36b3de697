import { RBAC_Action, type Permission, type Policy, type Principal, type RBAC } from '../gen/envoy/config/rbac/v3/rbac_pb.js';
import { UriTemplateMatchConfigSchema } from '../gen/envoy/extensions/path/match/uri_template/v3/uri_template_match_pb.js';
import type { PathMatcher } from '../gen/envoy/type/matcher/v3/path_pb.js';
import type { Connection, HttpRequest } from './context.js';
import {
  cidrContains,
  headerMatches,
  metadataMatches,
  pathOnly,
  stringMatches,
  unpack,
  type DynamicMetadata,
  type Headers,
} from './matchers.js';

/** What an RBAC engine evaluates: the connection, and the request for the HTTP filter. */
export interface RbacInput {
  readonly conn: Connection;
  /** Undefined for the network filter: header, path and metadata rules then see nothing. */
  readonly http: HttpRequest | undefined;
  readonly warn: (message: string) => void;
}

const NO_HEADERS: Headers = new Map();
const NO_METADATA: DynamicMetadata = {};

const headersOf = (i: RbacInput): Headers => i.http?.headers ?? NO_HEADERS;
const metadataOf = (i: RbacInput): DynamicMetadata => i.http?.metadata ?? NO_METADATA;

function urlPathMatches(i: RbacInput, m: PathMatcher): boolean {
  const path = i.http?.path;
  return path !== undefined && m.rule.case === 'path' && stringMatches(m.rule.value, pathOnly(path));
}

/**
 * Envoy's uri_template path matcher (istiod turns Istio's `{*}` / `{**}` into `*` / `**`): `*` and
 * `{var}` / `{var=*}` are one path segment, `**` and `{var=**}` any remainder.
 */
export function uriTemplateMatches(template: string, path: string): boolean {
  const toRe = (t: string): string =>
    t
      .split(/(\{[^}]*\}|\*\*|\*)/)
      .map((part) => {
        if (part === '**') return '.*';
        if (part === '*') return '[^/]+';
        if (part.startsWith('{') && part.endsWith('}')) {
          const eq = part.indexOf('=');
          return eq < 0 ? '[^/]+' : toRe(part.slice(eq + 1, -1));
        }
        return part.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
      })
      .join('');
  return new RegExp(`^${toRe(template)}$`).test(path);
}

export function permissionMatches(p: Permission, i: RbacInput): boolean {
  const r = p.rule;
  switch (r.case) {
    case 'any':
      return r.value;
    case 'andRules':
      return r.value.rules.every((x) => permissionMatches(x, i));
    case 'orRules':
      return r.value.rules.some((x) => permissionMatches(x, i));
    case 'notRule':
      return !permissionMatches(r.value, i);
    case 'header':
      return headerMatches(r.value, headersOf(i));
    case 'urlPath':
      return urlPathMatches(i, r.value);
    case 'destinationIp':
      return cidrContains(r.value, i.conn.dstIp);
    case 'destinationPort':
      return i.conn.dstPort === r.value;
    case 'destinationPortRange':
      return i.conn.dstPort >= r.value.start && i.conn.dstPort < r.value.end;
    case 'metadata':
      return metadataMatches(r.value, metadataOf(i));
    case 'requestedServerName':
      return stringMatches(r.value, i.conn.sni ?? '');
    case 'uriTemplate': {
      const t = unpack(r.value.typedConfig, UriTemplateMatchConfigSchema);
      if (!t) i.warn(`rbac: uri_template ${r.value.name} has an unknown config`);
      return t !== undefined && i.http !== undefined && uriTemplateMatches(t.pathTemplate, pathOnly(i.http.path));
    }
    case 'matcher':
      i.warn(`rbac: permission matcher extension ${r.value.name} is not modelled (no match)`);
      return false;
    case undefined:
      return false;
  }
}

export function principalMatches(p: Principal, i: RbacInput): boolean {
  const id = p.identifier;
  switch (id.case) {
    case 'any':
      return id.value;
    case 'andIds':
      return id.value.ids.every((x) => principalMatches(x, i));
    case 'orIds':
      return id.value.ids.some((x) => principalMatches(x, i));
    case 'notId':
      return !principalMatches(id.value, i);
    // Only a TLS connection this Envoy terminated has a peer certificate to authenticate.
    case 'authenticated':
      if (!i.conn.peerCertificate) return false;
      return id.value.principalName === undefined || stringMatches(id.value.principalName, i.conn.peerPrincipal ?? '');
    case 'sourceIp':
    case 'directRemoteIp':
    case 'remoteIp':
      return cidrContains(id.value, i.conn.srcIp);
    case 'header':
      return headerMatches(id.value, headersOf(i));
    case 'urlPath':
      return urlPathMatches(i, id.value);
    case 'metadata':
      return metadataMatches(id.value, metadataOf(i));
    case 'filterState':
      i.warn('rbac: filter_state principals are not modelled (no match)');
      return false;
    case undefined:
      return false;
  }
}

/** A policy matches when some permission and some principal match (and it has no CEL condition). */
export function policyMatches(p: Policy, i: RbacInput, name: string): boolean {
  if (p.condition || p.checkedCondition) {
    i.warn(`rbac: policy ${name} has a CEL condition, which is not modelled (no match)`);
    return false;
  }
  return p.permissions.some((x) => permissionMatches(x, i)) && p.principals.some((x) => principalMatches(x, i));
}

export interface RbacDecision {
  readonly allowed: boolean;
  /** Whether the engine enforces (ALLOW/DENY); LOG never changes the outcome. */
  readonly enforced: boolean;
  readonly policy?: string;
}

/**
 * One RBAC engine (envoy.config.rbac.v3.RBAC): ALLOW lets a request through only if some policy
 * matches (so no policies at all denies everything); DENY rejects it if some policy matches; LOG
 * only records. Policies are tried in name order, as Envoy's map of them.
 */
export function evaluateRbac(rules: RBAC, i: RbacInput): RbacDecision {
  const names = Object.keys(rules.policies).sort();
  const matched = names.find((n) => policyMatches(rules.policies[n]!, i, n));
  switch (rules.action) {
    case RBAC_Action.ALLOW:
      return { allowed: matched !== undefined, enforced: true, ...(matched !== undefined ? { policy: matched } : {}) };
    case RBAC_Action.DENY:
      return { allowed: matched === undefined, enforced: true, ...(matched !== undefined ? { policy: matched } : {}) };
    default:
      return { allowed: true, enforced: false, ...(matched !== undefined ? { policy: matched } : {}) };
  }
}
