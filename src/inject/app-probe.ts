/**
 * Application probe rewriting (istiod pkg/kube/inject/app_probe.go): with mTLS the kubelet cannot
 * reach the app's HTTP/TCP/gRPC probes through the sidecar, so they are pointed at the agent's
 * status port (`/app-health/<container>/readyz` …) and the originals travel to the agent in
 * ISTIO_KUBE_APP_PROBERS. On by default (Helm sidecarInjectorWebhook.rewriteAppHTTPProbe);
 * the pod annotation `sidecar.istio.io/rewriteAppHTTPProbers` overrides.
 */
import type { JsonValue } from '../util/json-patch.js';
import { findContainer, type WorkPod } from './pod-edits.js';
import { PROXY_CONTAINER, STATUS_PORT_ANNOTATION } from '../config/constants.js';

type JsonObject = { [key: string]: JsonValue };

export const KUBE_APP_PROBERS_ENV = 'ISTIO_KUBE_APP_PROBERS';

function rec(v: JsonValue | undefined): JsonObject | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : undefined;
}

function goParseBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

export function shouldRewriteProbes(annotations: Readonly<Record<string, string>>, fromValues: boolean): boolean {
  const v = annotations['sidecar.istio.io/rewriteAppHTTPProbers'];
  const b = v === undefined ? undefined : goParseBool(v);
  return b ?? fromValues;
}

function proberUrls(container: string): Record<'readyz' | 'livez' | 'startupz' | 'prestopz' | 'poststartz', string> {
  return {
    readyz: `/app-health/${container}/readyz`,
    livez: `/app-health/${container}/livez`,
    startupz: `/app-health/${container}/startupz`,
    prestopz: `/app-lifecycle/${container}/prestopz`,
    poststartz: `/app-lifecycle/${container}/poststartz`,
  };
}

/** The agent's view of one probe or lifecycle hook (istiod's Prober), or undefined. */
function prober(handler: JsonObject | undefined, withTimeout: boolean): JsonObject | undefined {
  if (handler === undefined) return undefined;
  const timeout =
    withTimeout && typeof handler.timeoutSeconds === 'number' && handler.timeoutSeconds !== 0
      ? { timeoutSeconds: handler.timeoutSeconds }
      : {};
  if (rec(handler.httpGet) !== undefined) return { httpGet: structuredClone(handler.httpGet as JsonValue), ...timeout };
  if (rec(handler.tcpSocket) !== undefined) return { tcpSocket: structuredClone(handler.tcpSocket as JsonValue), ...timeout };
  if (withTimeout && rec(handler.grpc) !== undefined) return { grpc: structuredClone(handler.grpc as JsonValue), ...timeout };
  return undefined;
}

/** Named ports resolve to numbers; a probe already aimed at the status port is not taken over. */
function resolvePort(p: JsonObject | undefined, ports: ReadonlyMap<string, number>, statusPort: number): JsonObject | undefined {
  if (p === undefined) return undefined;
  if (p.grpc !== undefined) return p;
  const action = rec(p.httpGet) ?? rec(p.tcpSocket);
  if (action === undefined) return undefined;
  if (typeof action.port === 'string') {
    const n = ports.get(action.port);
    if (n === undefined) return undefined;
    action.port = n;
  } else if (action.port === statusPort) {
    return undefined;
  }
  return p;
}

/** The ISTIO_KUBE_APP_PROBERS value (istiod's DumpAppProbers), '' when no probe moves. */
export function dumpAppProbers(pod: WorkPod, statusPort: number): string {
  const out: Record<string, JsonObject> = {};
  for (const c of [...pod.spec.initContainers, ...pod.spec.containers]) {
    const name = String(c.name ?? '');
    if (name === PROXY_CONTAINER) continue;
    const urls = proberUrls(name);
    const ports = new Map<string, number>();
    for (const p of Array.isArray(c.ports) ? c.ports : []) {
      const port = rec(p);
      if (port !== undefined && typeof port.name === 'string' && port.name !== '' && typeof port.containerPort === 'number')
        ports.set(port.name, port.containerPort);
    }
    const add = (key: string, p: JsonObject | undefined): void => {
      const resolved = resolvePort(p, ports, statusPort);
      if (resolved !== undefined) out[key] = resolved;
    };
    add(urls.readyz, prober(rec(c.readinessProbe), true));
    add(urls.livez, prober(rec(c.livenessProbe), true));
    add(urls.startupz, prober(rec(c.startupProbe), true));
    const lifecycle = rec(c.lifecycle);
    add(urls.prestopz, prober(rec(lifecycle?.preStop), false));
    add(urls.poststartz, prober(rec(lifecycle?.postStart), false));
  }
  if (Object.keys(out).length === 0) return '';
  // Go marshals the map with sorted keys; each Prober in its field order.
  const keys = Object.keys(out).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(orderProber(out[k] ?? {}))}`).join(',')}}`;
}

function orderProber(p: JsonObject): JsonObject {
  const o: JsonObject = {};
  for (const k of ['httpGet', 'tcpSocket', 'grpc', 'timeoutSeconds']) if (p[k] !== undefined) o[k] = p[k];
  return o;
}

function rewriteAction(action: JsonObject, url: string, port: number): JsonObject {
  const out: JsonObject = { ...action, port, path: url };
  if (out.scheme === 'HTTPS') out.scheme = 'HTTP';
  return out;
}

function convertProbe(probe: JsonObject | undefined, url: string, port: number, grpcToo: boolean): JsonObject | undefined {
  if (probe === undefined) return undefined;
  const http = rec(probe.httpGet);
  if (http !== undefined) return { ...probe, httpGet: rewriteAction(http, url, port) };
  if (rec(probe.tcpSocket) !== undefined || (grpcToo && rec(probe.grpc) !== undefined)) {
    const { tcpSocket: _t, grpc: _g, ...rest } = probe;
    return grpcToo
      ? { ...rest, httpGet: rewriteAction({}, url, port) }
      : { ...rest, ...(probe.grpc !== undefined ? { grpc: probe.grpc } : {}), httpGet: rewriteAction({}, url, port) };
  }
  return undefined;
}

/** Points every app probe at the agent (istiod's patchRewriteProbe) and hands the originals over. */
export function rewriteAppProbes(pod: WorkPod, statusPort: number): void {
  const sidecar = findContainer(pod, PROXY_CONTAINER);
  if (sidecar === undefined) return;
  const probers = dumpAppProbers(pod, statusPort);
  if (probers !== '') sidecar.env = [...(Array.isArray(sidecar.env) ? sidecar.env : []), { name: KUBE_APP_PROBERS_ENV, value: probers }];
  let port = statusPort;
  const annotated = pod.metadata.annotations[STATUS_PORT_ANNOTATION];
  if (annotated !== undefined && /^-?\d+$/.test(annotated)) port = Number(annotated);
  for (const c of [...pod.spec.containers, ...pod.spec.initContainers]) {
    if (c.name === PROXY_CONTAINER) continue;
    const urls = proberUrls(String(c.name ?? ''));
    for (const [field, url] of [
      ['readinessProbe', urls.readyz],
      ['livenessProbe', urls.livez],
      ['startupProbe', urls.startupz],
    ] as const) {
      const converted = convertProbe(rec(c[field]), url, port, true);
      if (converted !== undefined) c[field] = converted;
    }
    const lifecycle = rec(c.lifecycle);
    if (lifecycle !== undefined) {
      const next: JsonObject = { ...lifecycle };
      for (const [field, url] of [
        ['preStop', urls.prestopz],
        ['postStart', urls.poststartz],
      ] as const) {
        const converted = convertProbe(rec(lifecycle[field]), url, port, false);
        if (converted !== undefined) next[field] = converted;
      }
      c.lifecycle = next;
    }
  }
}

/** istiod's applyRewrite: probes move to the agent unless the values or the pod's annotation say not to. */
export function applyProbeRewrite(pod: WorkPod, rewriteFromValues: boolean, statusPort: number): void {
  if (shouldRewriteProbes(pod.metadata.annotations, rewriteFromValues)) rewriteAppProbes(pod, statusPort);
}
