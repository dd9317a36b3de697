/**
 * PeerAuthentication → ztunnel DENY policies, as istiod converts them
 * (pilot/pkg/serviceregistry/ambient/authorization.go and policies.go). ztunnel has no mTLS mode:
 * STRICT is a DENY of connections without a peer identity. One static policy in the root namespace
 * (`istio_converted_static_strict`) says so for every workload whose effective mode is STRICT; a
 * workload policy with port-level exceptions becomes its own policy
 * (`converted_peer_authentication_<name>`), which folds in the inherited STRICT so that the static
 * policy (a DENY that an exception could not undo) can be left off that workload.
 *
 * istiod's choices are kept as they are, including where they disagree with each other (see
 * docs/security.md, "AuthorizationPolicy for ztunnel").
 */
import { create } from '@bufbuild/protobuf';
import { EmptySchema } from '@bufbuild/protobuf/wkt';
import { oldestConfig, type Config } from '../../config/index.js';
import {
  PeerAuthentication_MutualTLS_Mode as Mode,
  type PeerAuthentication_MutualTLS,
} from '../../gen/security/v1beta1/peer_authentication_pb.js';
import {
  Action,
  AuthorizationSchema,
  GroupSchema,
  MatchSchema,
  RulesSchema,
  Scope,
  type Authorization,
  type Group,
  type Rules,
} from '../../gen/workloadapi/security/authorization_pb.js';
import { compareIds } from '../../util/order.js';

type PeerAuthentication = Config<'PeerAuthentication'>;

/** The static STRICT policy's name: `_` cannot appear in a Kubernetes name, so it never collides with a user's policy. */
export const STATIC_STRICT_POLICY_NAME = 'istio_converted_static_strict';
/** The prefix of a converted PeerAuthentication's name (istiod's GetAmbientPolicyConfigName). */
export const CONVERTED_PEER_AUTHENTICATION_PREFIX = 'converted_peer_authentication_';

const modeOf = (mtls: PeerAuthentication_MutualTLS | undefined): Mode => mtls?.mode ?? Mode.UNSET;
const isStrict = (mtls: PeerAuthentication_MutualTLS | undefined): boolean => modeOf(mtls) === Mode.STRICT;
const isUnset = (mtls: PeerAuthentication_MutualTLS | undefined): boolean => modeOf(mtls) === Mode.UNSET;
const isPermissive = (mtls: PeerAuthentication_MutualTLS | undefined): boolean => modeOf(mtls) === Mode.PERMISSIVE;
const isDisable = (mtls: PeerAuthentication_MutualTLS | undefined): boolean => modeOf(mtls) === Mode.DISABLE;

/** Deny a connection without a peer identity (not mTLS), optionally on one port only. */
function denyPlaintext(port?: number): Rules {
  return create(RulesSchema, {
    matches: [
      create(MatchSchema, {
        notPrincipals: [{ matchType: { case: 'presence', value: create(EmptySchema) } }],
        destinationPorts: port === undefined ? [] : [port],
      }),
    ],
  });
}

/** The static STRICT policy; istiod sends it as soon as any PeerAuthentication exists. */
export function staticStrictAuthorization(rootNamespace: string): Authorization {
  return create(AuthorizationSchema, {
    name: STATIC_STRICT_POLICY_NAME,
    namespace: rootNamespace,
    scope: Scope.WORKLOAD_SELECTOR,
    action: Action.DENY,
    groups: [create(GroupSchema, { rules: [denyPlaintext()] })],
  });
}

/** `<namespace>/converted_peer_authentication_<name>`: how a workload refers to a converted policy. */
export const convertedPeerAuthenticationResourceName = (pa: PeerAuthentication): string =>
  `${pa.meta.namespace}/${CONVERTED_PEER_AUTHENTICATION_PREFIX}${pa.meta.name}`;

/** The port-level settings in ascending port order (istiod iterates them sorted). */
function portLevel(pa: PeerAuthentication): [number, PeerAuthentication_MutualTLS][] {
  return Object.entries(pa.spec.portLevelMtls)
    .map(([port, mtls]): [number, PeerAuthentication_MutualTLS] => [Number(port), mtls])
    .sort((a, b) => a[0] - b[0]);
}

/**
 * The DENY policy a workload PeerAuthentication with port-level mTLS becomes, or undefined when
 * none is needed. `namespacePolicy`/`rootPolicy`: the oldest selector-less PeerAuthentication of
 * its namespace and of the root namespace, whose modes it inherits.
 */
export function convertPeerAuthentication(
  rootNamespace: string,
  pa: PeerAuthentication,
  namespacePolicy: PeerAuthentication | undefined,
  rootPolicy: PeerAuthentication | undefined,
): Authorization | undefined {
  const spec = pa.spec;
  if (pa.meta.namespace === rootNamespace || spec.selector === undefined || Object.keys(spec.portLevelMtls).length === 0) return undefined;
  const mode = modeOf(spec.mtls);
  const nsMtls = namespacePolicy?.spec.mtls;
  const rootMtls = rootPolicy?.spec.mtls;
  const rules: Rules[] = [];
  const groups: Group[] = [];
  if (mode === Mode.STRICT) rules.push(denyPlaintext());
  let foundNonStrictPort = false;
  for (const [port, mtls] of portLevel(pa)) {
    const portMode = modeOf(mtls);
    if (portMode === Mode.STRICT) {
      // A STRICT port under an already STRICT parent needs no rule. istiod's condition is kept as
      // written: its last clause (root STRICT, namespace absent or UNSET) applies whatever the
      // workload's own mode is.
      const parentStrict =
        isStrict(spec.mtls) ||
        (isUnset(spec.mtls) && namespacePolicy !== undefined && isStrict(nsMtls)) ||
        ((namespacePolicy === undefined || isUnset(nsMtls)) && rootPolicy !== undefined && isStrict(rootMtls));
      if (parentStrict) continue;
      // Groups are OR-ed: one per STRICT port.
      groups.push(create(GroupSchema, { rules: [denyPlaintext(port)] }));
    } else if (portMode === Mode.PERMISSIVE || portMode === Mode.DISABLE) {
      if (mode === Mode.PERMISSIVE || mode === Mode.DISABLE) continue;
      if (
        mode === Mode.UNSET &&
        ((namespacePolicy !== undefined && !isStrict(nsMtls)) ||
          (namespacePolicy === undefined && rootPolicy !== undefined && !isStrict(rootMtls)) ||
          (namespacePolicy === undefined && rootPolicy === undefined))
      ) {
        continue; // not STRICT on the port and not STRICT around it: nothing to deny
      }
      foundNonStrictPort = true;
      // The exception: the deny holds only off this port (this rule is AND-ed with the plaintext deny).
      rules.push(create(RulesSchema, { matches: [create(MatchSchema, { notDestinationPorts: [port] })] }));
    }
    // An UNSET port inherits: nothing to add.
  }
  // STRICT with only STRICT ports is the static policy's job.
  if (mode === Mode.STRICT && !foundNonStrictPort) return undefined;
  if (rules.length === 0 && groups.length === 0) return undefined;
  // Fold an inherited STRICT into this policy, so the workload can do without the static one.
  const mergeStrict =
    (rootPolicy !== undefined && isStrict(rootMtls) && (namespacePolicy === undefined || isUnset(nsMtls) || isStrict(nsMtls))) ||
    (namespacePolicy !== undefined && isStrict(nsMtls));
  if (mergeStrict && foundNonStrictPort) rules.push(denyPlaintext());
  if (rules.length > 0) groups.push(create(GroupSchema, { rules }));
  return create(AuthorizationSchema, {
    name: `${CONVERTED_PEER_AUTHENTICATION_PREFIX}${pa.meta.name}`,
    namespace: pa.meta.namespace,
    scope: Scope.WORKLOAD_SELECTOR,
    action: Action.DENY,
    groups,
  });
}

/**
 * The PeerAuthentication-derived policies a workload refers to (istiod's
 * convertedSelectorPeerAuthentications): the static STRICT policy when its effective mode is
 * STRICT, and/or its workload policy's converted form when port-level settings make exceptions.
 * `policies`: the PeerAuthentications that apply to it (its namespace's without selector or
 * selecting it, the root namespace's without selector). Sorted.
 */
export function peerAuthenticationPolicyNames(rootNamespace: string, policies: readonly PeerAuthentication[]): string[] {
  const meshLevel: PeerAuthentication[] = [];
  const namespaceLevel: PeerAuthentication[] = [];
  const workloadLevel: PeerAuthentication[] = [];
  for (const p of policies) {
    const selectorLess = p.spec.selector === undefined || Object.keys(p.spec.selector.matchLabels).length === 0;
    if (selectorLess) (p.meta.namespace === rootNamespace ? meshLevel : namespaceLevel).push(p);
    else if (p.meta.namespace !== rootNamespace) workloadLevel.push(p);
  }
  const mesh = oldestConfig(meshLevel);
  const ns = oldestConfig(namespaceLevel);
  const workload = oldestConfig(workloadLevel);
  let strict = mesh !== undefined && isStrict(mesh.spec.mtls);
  if (ns && !isUnset(ns.spec.mtls)) strict = isStrict(ns.spec.mtls);
  let portPolicy: string | undefined;
  if (workload) {
    const spec = workload.spec;
    if (isStrict(spec.mtls)) strict = true;
    if (isPermissive(spec.mtls) || isDisable(spec.mtls)) strict = false;
    const portModes = Object.values(spec.portLevelMtls);
    if (portModes.length > 0) {
      const own = convertedPeerAuthenticationResourceName(workload);
      switch (modeOf(spec.mtls)) {
        case Mode.STRICT:
          // A non-STRICT port: the converted policy carries the STRICT default and the exception.
          if (portModes.some((m) => isPermissive(m) || isDisable(m))) {
            portPolicy = own;
            strict = false;
          }
          break;
        case Mode.PERMISSIVE:
        case Mode.DISABLE:
          if (portModes.some(isStrict)) portPolicy = own;
          break;
        default:
          if (strict) {
            // Only PERMISSIVE counts as an exception here (DISABLE does not), as in istiod.
            if (portModes.some(isPermissive)) {
              portPolicy = own;
              strict = false;
            }
          } else if (portModes.some(isStrict)) {
            portPolicy = own;
          }
      }
    }
  }
  const names = new Set<string>();
  if (strict) names.add(`${rootNamespace}/${STATIC_STRICT_POLICY_NAME}`);
  if (portPolicy !== undefined) names.add(portPolicy);
  return [...names].sort(compareIds);
}
