/**
 * istiod's feature flags that shape the Gateway API deployment controller, read once at start
 * from the environment under istiod's names (pilot/pkg/features), with istiod's defaults.
 */
import { envBool } from '../util/env.js';

export interface GatewayDeployOptions {
  /** PILOT_GATEWAY_API_DEFAULT_GATEWAYCLASS_NAME: the class handled without a GatewayClass object. */
  readonly defaultClassName: string;
  /** PILOT_GATEWAY_API_CONTROLLER_NAME: GatewayClasses with this controllerName are ours. */
  readonly controllerName: string;
  /** PILOT_ENABLE_GATEWAY_API_COPY_LABELS_ANNOTATIONS: Gateway labels/annotations reach its objects. */
  readonly copyLabelsAnnotations: boolean;
  /** PILOT_ENABLE_QUIC_LISTENERS: HTTPS listeners also get a UDP Service port. */
  readonly quicListeners: boolean;
  /** PILOT_ENABLE_AMBIENT (and PILOT_ENABLE_AMBIENT_WAYPOINTS): gateways are labelled out of ambient capture. */
  readonly ambientWaypoints: boolean;
  /** PILOT_ENABLE_GATEWAY_API_MANUAL_DEPLOYMENT: a Gateway with a hostname address is not deployed. */
  readonly manualDeployment: boolean;
  /** CLUSTER_ID. */
  readonly clusterId: string;
  /** REVISION: this control plane's revision ('' = default). */
  readonly revision: string;
  /** COMPLIANCE_POLICY. */
  readonly compliancePolicy: string;
}

type Env = Readonly<Record<string, string | undefined>>;

export function gatewayDeployOptions(env: Env): GatewayDeployOptions {
  const ambient = envBool(env, 'PILOT_ENABLE_AMBIENT', false);
  return {
    defaultClassName: env.PILOT_GATEWAY_API_DEFAULT_GATEWAYCLASS_NAME || 'istio',
    controllerName: env.PILOT_GATEWAY_API_CONTROLLER_NAME || 'istio.io/gateway-controller',
    copyLabelsAnnotations: envBool(env, 'PILOT_ENABLE_GATEWAY_API_COPY_LABELS_ANNOTATIONS', true),
    quicListeners: envBool(env, 'PILOT_ENABLE_QUIC_LISTENERS', false),
    // istiod's registerAmbient: on by default only when ambient is enabled.
    ambientWaypoints: ambient && envBool(env, 'PILOT_ENABLE_AMBIENT_WAYPOINTS', true),
    manualDeployment: envBool(env, 'PILOT_ENABLE_GATEWAY_API_MANUAL_DEPLOYMENT', true),
    clusterId: env.CLUSTER_ID || 'Kubernetes',
    revision: env.REVISION ?? '',
    compliancePolicy: env.COMPLIANCE_POLICY ?? '',
  };
}
