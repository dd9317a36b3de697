/**
 * What istiod's gateway deployment controller applies for one Gateway (pilot/pkg/config/kube/
 * gatewaycommon/deploymentcontroller.go): the injector's `kube-gateway` template rendered with the
 * Gateway as input, each object customised by the class-defaults and parametersRef ConfigMaps
 * (strategic merge), checked by istiod's safeguards and labelled as managed. A pure function of its
 * inputs, so the same Gateway renders the same objects as istiod's own test goldens.
 */
import type { MeshConfig } from '../gen/mesh/v1alpha1/config_pb.js';
import type { ProxyConfig } from '../gen/mesh/v1alpha1/proxy_pb.js';
import { type InjectorSnapshot, POD_MERGE_KEYS, strategicMerge } from '../inject/index.js';
import type { JsonValue } from '../util/json-patch.js';
import { decodeYamlLikeGo } from '../template/index.js';
import { errorCodeOf, errorMessage, MeshError } from '../util/errors.js';
import { rec, str } from './json.js';
import type { GatewayDeployOptions } from './options.js';
import { infrastructureMetadata, servicePorts, templateInput } from './template-input.js';
import { DATAPLANE_MODE_LABEL, NETWORK_LABEL } from '../config/constants.js';

type JsonObject = { [key: string]: JsonValue };

/** istiod's class info for its own controller (the `istio` class). */
export const KUBE_GATEWAY_TEMPLATE = 'kube-gateway';
/** The value of gateway.istio.io/managed on what the controller owns: the controller name, / → -. */
export const MANAGED_LABEL = 'gateway.istio.io/managed';
/** Larger numbers win: a Gateway annotated by a newer controller is left to it (istiod's ControllerVersion). */
export const CONTROLLER_VERSION = 5;
export const CONTROLLER_VERSION_ANNOTATION = 'gateway.istio.io/controller-version';

export function managedLabelValue(controllerName: string): string {
  return controllerName.replaceAll('/', '-');
}

/** The built-in waypoint class and its controller (istiod's constants.WaypointGatewayClassName, ManagedGatewayMeshController). */
export const WAYPOINT_CLASS_NAME = 'istio-waypoint';
export const MESH_CONTROLLER = 'istio.io/mesh-controller';
export const WAYPOINT_TEMPLATE = 'waypoint';

/** What the controller deploys for a class (istiod's ClassInfo). */
export interface ClassInfo {
  readonly controller: string;
  /** The injector template rendered per Gateway. */
  readonly template: string;
  /** Objects are named after the Gateway alone, not `<gateway>-<class>`. */
  readonly disableNameSuffix: boolean;
  readonly defaultServiceType: string;
  /** The value of gateway.istio.io/managed on the pods. */
  readonly controllerLabel: string;
}

/** istiod's ClassInfos for the controllers it deploys for: its gateway controller and, with ambient waypoints, the mesh controller. */
export function classInfo(controller: string | undefined, options: GatewayDeployOptions): ClassInfo | undefined {
  if (controller === options.controllerName) {
    return {
      controller,
      template: KUBE_GATEWAY_TEMPLATE,
      disableNameSuffix: false,
      defaultServiceType: 'LoadBalancer',
      controllerLabel: 'istio.io-gateway-controller',
    };
  }
  if (controller === MESH_CONTROLLER && options.ambientWaypoints) {
    return {
      controller,
      template: WAYPOINT_TEMPLATE,
      disableNameSuffix: true,
      defaultServiceType: 'ClusterIP',
      controllerLabel: 'istio.io-mesh-controller',
    };
  }
  return undefined;
}

/**
 * The controller a Gateway's class names: its GatewayClass's controllerName, else a built-in class
 * (the default class; `istio-waypoint` when ambient waypoints are on).
 */
export function controllerOf(
  gateway: Record<string, unknown>,
  gatewayClasses: ReadonlyMap<string, Record<string, unknown>>,
  options: GatewayDeployOptions,
): string | undefined {
  const className = str(rec(gateway.spec).gatewayClassName);
  const cls = gatewayClasses.get(className);
  if (cls !== undefined) return str(rec(cls.spec).controllerName);
  if (className === options.defaultClassName) return options.controllerName;
  return className === WAYPOINT_CLASS_NAME && options.ambientWaypoints ? MESH_CONTROLLER : undefined;
}

/**
 * istiod's IsManaged: no address, or a single IP address (it becomes the Service's loadBalancerIP),
 * means we deploy; a hostname address points at an existing deployment.
 */
export function isManaged(gateway: Record<string, unknown>, options: GatewayDeployOptions): boolean {
  if (!options.manualDeployment) return true;
  const addresses = Array.isArray(rec(gateway.spec).addresses) ? (rec(gateway.spec).addresses as unknown[]) : [];
  if (addresses.length === 0) return true;
  if (addresses.length > 1) return false;
  const type = rec(addresses[0]).type;
  return type === undefined || type === 'IPAddress';
}

/**
 * istiod's ManagedGatewayControllerVersion: whether we manage this Gateway and whether we must
 * (re)write our version annotation first.
 */
export function controllerVersionDecision(gateway: Record<string, unknown>): { manage: boolean; writeVersion: boolean } {
  const current = rec(rec(gateway.metadata).annotations)[CONTROLLER_VERSION_ANNOTATION];
  if (typeof current !== 'string') return { manage: true, writeVersion: true };
  if (!/^[+-]?\d+$/.test(current)) return { manage: false, writeVersion: false };
  const n = Number(current);
  if (n > CONTROLLER_VERSION) return { manage: false, writeVersion: false };
  return { manage: true, writeVersion: n < CONTROLLER_VERSION };
}

/** The apply patch that marks our ownership of a Gateway (istiod's, written on the Gateway itself here). */
export function controllerVersionPatch(): JsonObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { annotations: { [CONTROLLER_VERSION_ANNOTATION]: String(CONTROLLER_VERSION) } },
  };
}

export interface RenderGatewayArgs {
  /** The Gateway as the API server serves it. */
  readonly gateway: Record<string, unknown>;
  readonly controllerName: string;
  readonly injector: InjectorSnapshot;
  readonly mesh: MeshConfig;
  /** The ProxyConfig in effect for the gateway's pods (mesh defaultConfig and ProxyConfig resources). */
  readonly proxyConfig: ProxyConfig;
  /** The API server's version as istiod's GetVersionAsInt: 1.28 → 128. */
  readonly kubeVersion: number;
  /** ConfigMap data in order of precedence: the class defaults, then spec.infrastructure.parametersRef's. */
  readonly overlays: ReadonlyArray<Readonly<Record<string, string>>>;
  readonly options: GatewayDeployOptions;
}

/** Overlay keys istiod accepts, by the kind they customise. */
const OVERLAY_KEY_BY_KIND: Readonly<Record<string, string>> = {
  Deployment: 'deployment',
  Service: 'service',
  ServiceAccount: 'serviceAccount',
  HorizontalPodAutoscaler: 'horizontalPodAutoscaler',
  PodDisruptionBudget: 'podDisruptionBudget',
};
/** Objects rendered only when an overlay customises them. */
const REQUIRED_OVERLAYS = new Set(['horizontalPodAutoscaler', 'podDisruptionBudget']);
const SERVICE_MERGE_KEYS: Readonly<Record<string, string>> = { ...POD_MERGE_KEYS, ports: 'port' };
const ALLOWED_KINDS = new Set(['Deployment', 'DaemonSet', 'Service', 'ServiceAccount', 'HorizontalPodAutoscaler', 'PodDisruptionBudget']);

/** Go's yml.SplitString: documents separated by `---` lines, blank ones dropped. */
function splitDocuments(text: string): string[] {
  return text
    .split(/^---\s*$/m)
    .map((d) => d.trim())
    .filter((d) => d !== '');
}

/** The metadata an overlay must not change (istiod refuses "illegal metadata change"). */
function fixedMetadata(o: JsonObject): string {
  const m = rec(o.metadata);
  return JSON.stringify([
    m.name,
    m.generateName,
    m.namespace,
    m.uid,
    m.resourceVersion,
    m.generation,
    m.creationTimestamp,
    m.deletionTimestamp,
    m.ownerReferences,
    m.finalizers,
  ]);
}

function applyOverlays(object: JsonObject, overlays: RenderGatewayArgs['overlays']): JsonObject | undefined {
  const kind = str(object.kind);
  const key = OVERLAY_KEY_BY_KIND[kind];
  if (key === undefined) throw new MeshError('INVALID_ARGUMENT', `unknown overlay kind "${kind}"`);
  let out = object;
  let applied = false;
  for (const overlay of overlays) {
    for (const k of Object.keys(overlay)) {
      if (!Object.values(OVERLAY_KEY_BY_KIND).includes(k))
        throw new MeshError(
          'INVALID_ARGUMENT',
          `unsupported overlay "${k}" (supported: ${Object.values(OVERLAY_KEY_BY_KIND).sort().join(' ')})`,
        );
    }
    const text = overlay[key];
    if (text === undefined) continue;
    const patch = decodeYamlLikeGo(text) ?? {};
    if (typeof patch !== 'object' || Array.isArray(patch))
      throw new MeshError('INVALID_ARGUMENT', `overlay "${key}" is not a YAML mapping`);
    out = strategicMerge(out, patch as JsonObject, kind === 'Service' ? SERVICE_MERGE_KEYS : POD_MERGE_KEYS);
    applied = true;
  }
  if (!applied && REQUIRED_OVERLAYS.has(key)) return undefined;
  if (fixedMetadata(out) !== fixedMetadata(object) || rec(out.metadata).managedFields !== undefined)
    throw new MeshError('INVALID_ARGUMENT', 'illegal metadata change');
  return out;
}

export interface RenderedGateway {
  readonly deploymentName: string;
  readonly serviceAccount: string;
  /** The objects to server-side apply, in the template's order. */
  readonly objects: readonly JsonObject[];
}

/**
 * Renders the objects for one Gateway. Throws with the reason when the template, an overlay or a
 * safeguard fails (istiod logs it and does not retry: the inputs must change first).
 */
export function renderGateway(a: RenderGatewayArgs): RenderedGateway {
  const { gateway, options } = a;
  const info = classInfo(a.controllerName, options);
  if (!info) throw new MeshError('INVALID_ARGUMENT', `controller "${a.controllerName}" is not one this control plane deploys for`);
  const meta = rec(gateway.metadata);
  const name = str(meta.name);
  const namespace = str(meta.namespace);
  const annotations = rec(meta.annotations);
  const className = str(rec(gateway.spec).gatewayClassName);
  const defaultName = info.disableNameSuffix ? name : `${name}-${className}`;
  const deploymentName = str(annotations['gateway.istio.io/name-override']) || defaultName;
  const serviceAccount = str(annotations['gateway.istio.io/service-account']) || defaultName;
  const labels = infrastructureMetadata(gateway, 'labels', options.copyLabelsAnnotations);
  // istiod's setLabelOverrides: gateways opt out of ambient capture unless labelled; waypoints and
  // east-west gateways (by class name) take the mesh network by default instead.
  const isWaypoint = className.includes('waypoint') || className.includes('east-west');
  const hasAmbientLabel = DATAPLANE_MODE_LABEL in rec(meta.labels) || DATAPLANE_MODE_LABEL in labels;
  if (options.ambientWaypoints && !isWaypoint && !hasAmbientLabel) labels[DATAPLANE_MODE_LABEL] = 'none';
  const network = str(rec(rec(a.injector.values).global).network);
  if (isWaypoint && network !== '' && !(NETWORK_LABEL in rec(meta.labels))) labels[NETWORK_LABEL] = network;
  const input = templateInput({
    gateway,
    className,
    deploymentName,
    serviceAccount,
    serviceType: str(annotations['networking.istio.io/service-type']) || info.defaultServiceType,
    ports: servicePorts(gateway, options.quicListeners),
    kubeVersion: a.kubeVersion,
    infrastructureLabels: labels,
    infrastructureAnnotations: infrastructureMetadata(gateway, 'annotations', options.copyLabelsAnnotations),
    controllerLabel: info.controllerLabel,
    options,
    proxyConfig: a.proxyConfig,
    mesh: a.mesh,
    values: a.injector.values,
  });
  let text: string;
  try {
    text = a.injector.templates.execute(info.template, input);
  } catch (err) {
    throw new MeshError(errorCodeOf(err), `rendering template "${info.template}": ${errorMessage(err)}`, { cause: err });
  }
  const objects: JsonObject[] = [];
  for (const doc of splitDocuments(text)) {
    const parsed = decodeYamlLikeGo(doc);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new MeshError('INVALID_ARGUMENT', `template "${info.template}" rendered a document that is not an object`);
    const customised = applyOverlays(parsed as JsonObject, a.overlays);
    if (customised === undefined) continue;
    objects.push(checked(customised, { name, namespace, deploymentName, serviceAccount }, a.controllerName));
  }
  return { deploymentName, serviceAccount, objects };
}

/** istiod's apply safeguards (kind, namespace, name), then the managed label. */
function checked(
  object: JsonObject,
  gw: { name: string; namespace: string; deploymentName: string; serviceAccount: string },
  controllerName: string,
): JsonObject {
  const kind = str(object.kind);
  const meta = rec(object.metadata);
  const objName = str(meta.name);
  if (!ALLOWED_KINDS.has(kind))
    throw new MeshError('INVALID_ARGUMENT', `unexpected object kind "${kind}", only ${[...ALLOWED_KINDS].join(', ')} are allowed`);
  if (str(meta.namespace) !== gw.namespace)
    throw new MeshError('INVALID_ARGUMENT', `object namespace "${str(meta.namespace)}" does not match gateway namespace "${gw.namespace}"`);
  if (objName !== gw.deploymentName && objName !== gw.serviceAccount && !objName.startsWith(gw.name)) {
    throw new MeshError(
      'INVALID_ARGUMENT',
      `object name "${objName}" does not match expected pattern (expected ${gw.deploymentName} or ${gw.serviceAccount}, or a prefix of "${gw.name}")`,
    );
  }
  const labels = { ...rec(meta.labels), [MANAGED_LABEL]: managedLabelValue(controllerName) } as JsonObject;
  return { ...object, metadata: { ...(meta as JsonObject), labels } };
}
