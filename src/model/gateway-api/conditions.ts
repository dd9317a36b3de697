/**
 * Gateway API status conditions as istiod writes them (its `condition` → metav1.Condition): each
 * condition has a success reason and message, and an optional error that replaces them and
 * inverts the status. Timestamps and observedGeneration are the writer's (the leader fills them in
 * from the live object); what is computed here is a pure function of the config.
 */

/** A condition as it appears in `status.conditions`, without lastTransitionTime/observedGeneration. */
export interface Condition {
  readonly type: string;
  readonly status: 'True' | 'False';
  readonly reason: string;
  readonly message: string;
}

/** A reason and message that, when set on a condition, flip it (istiod's ConfigError). */
export interface ConditionError {
  readonly reason: string;
  readonly message: string;
}

/** One condition before it is rendered: success form, optional error. */
export interface ConditionDraft {
  reason: string;
  message: string;
  /** Status on success (default True); an error inverts it. */
  status?: 'True' | 'False';
  error?: ConditionError | undefined;
}

const invert = (s: 'True' | 'False'): 'True' | 'False' => (s === 'True' ? 'False' : 'True');

/** The conditions of a draft map, sorted by type as istiod sets them. */
export function renderConditions(drafts: Readonly<Record<string, ConditionDraft>>): Condition[] {
  return Object.keys(drafts)
    .sort()
    .map((type) => {
      const d = drafts[type]!;
      const status = d.status ?? 'True';
      return d.error
        ? { type, status: invert(status), reason: d.error.reason, message: d.error.message }
        : { type, status, reason: d.reason, message: d.message };
    });
}

/** istiod's HumanReadableJoin: `a`, `a and b`, `a, b, and c`. */
export function humanReadableJoin(items: readonly string[]): string {
  if (items.length <= 1) return items[0] ?? '';
  if (items.length === 2) return `${items[0]!} and ${items[1]!}`;
  return `${items.slice(0, -1).join(', ')}, and ${items[items.length - 1]!}`;
}

/** Joins two errors as istiod's joinErrors (messages with `; `, the first reason). */
export function joinErrors(a: ConditionError | undefined, b: ConditionError | undefined): ConditionError | undefined {
  if (!a) return b;
  if (!b) return a;
  return { reason: a.reason, message: `${a.message}; ${b.message}` };
}

/** The controller name Istio's `istio` GatewayClass uses (istiod's ManagedGatewayController). */
export const ISTIO_GATEWAY_CONTROLLER = 'istio.io/gateway-controller';
/** The controller of ambient waypoints (class `istio-waypoint`): its Gateways get a status, not gateway config. */
export const ISTIO_MESH_CONTROLLER = 'istio.io/mesh-controller';

/** Status of a route's parent, as written under `status.parents`. */
export interface RouteParentStatus {
  readonly parentRef: Readonly<Record<string, string | number>>;
  readonly controllerName: string;
  readonly conditions: readonly Condition[];
}

export interface ListenerStatus {
  readonly name: string;
  readonly attachedRoutes: number;
  readonly supportedKinds: readonly { readonly group: string; readonly kind: string }[];
  readonly conditions: readonly Condition[];
}

export interface GatewayStatusAddress {
  readonly type: 'IPAddress' | 'Hostname';
  readonly value: string;
}

/** The status of one Gateway API object meshpilot owns (what the leader writes). */
export type ObjectStatus =
  | {
      readonly kind: 'GatewayClass';
      readonly name: string;
      readonly namespace: '';
      readonly status: { readonly conditions: readonly Condition[] };
    }
  | {
      readonly kind: 'Gateway';
      readonly name: string;
      readonly namespace: string;
      readonly status: {
        readonly addresses: readonly GatewayStatusAddress[];
        readonly conditions: readonly Condition[];
        readonly listeners: readonly ListenerStatus[];
      };
    }
  | {
      readonly kind: 'HTTPRoute' | 'GRPCRoute' | 'TCPRoute' | 'TLSRoute';
      readonly name: string;
      readonly namespace: string;
      readonly status: { readonly parents: readonly RouteParentStatus[] };
    };
