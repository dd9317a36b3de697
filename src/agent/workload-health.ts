/**
 * The readiness probe of a VM's workload (pilot-agent's pkg/istio-agent/health): ProxyConfig
 * `readinessProbe` (from the WorkloadGroup's `probe`, which `meshctl x workload entry configure`
 * writes into mesh.yaml) is run every periodSeconds after initialDelaySeconds; only a change of
 * state, once successThreshold or failureThreshold consecutive results agree, is reported — as a
 * HealthInformation request on the ADS stream (xds-proxy.ts), which the control plane turns into
 * the WorkloadEntry's `Healthy` condition.
 */
import { execFile } from 'node:child_process';
import { create, toBinary } from '@bufbuild/protobuf';
import { DeltaDiscoveryRequestSchema, DiscoveryRequestSchema } from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import { TypeUrl } from '../xds/type-urls.js';
import { MeshError } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { runAppProbe, type AppProber } from './app-probers.js';

/** ProxyConfig.readinessProbe (istio.networking.v1alpha3.ReadinessProbe) as proto JSON. */
export interface ReadinessProbeJson {
  readonly initialDelaySeconds?: number;
  readonly timeoutSeconds?: number;
  readonly periodSeconds?: number;
  readonly successThreshold?: number;
  readonly failureThreshold?: number;
  readonly httpGet?: {
    readonly path?: string;
    readonly port: number;
    readonly host?: string;
    readonly scheme?: string;
    readonly httpHeaders?: readonly { readonly name: string; readonly value: string }[];
  };
  readonly tcpSocket?: { readonly host?: string; readonly port: number };
  readonly grpc?: { readonly port: number; readonly service?: string };
  readonly exec?: { readonly command: readonly string[] };
}

/** A probe with pilot-agent's defaults filled in (fillInDefaults). */
export interface WorkloadProbe {
  readonly initialDelayMs: number;
  readonly timeoutMs: number;
  readonly periodMs: number;
  readonly successThreshold: number;
  readonly failureThreshold: number;
  readonly method: ReadinessProbeJson;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads `readinessProbe` of a ProxyConfig; undefined when there is none; an error naming the field when it is malformed. */
export function parseReadinessProbe(value: unknown, what: string): WorkloadProbe | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value)) throw new MeshError('INVALID_ARGUMENT', `${what}: not an object`);
  const p = value as ReadinessProbeJson;
  const n = (k: keyof ReadinessProbeJson, def: number): number => {
    const v = value[k];
    if (v === undefined || v === 0) return def;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
      throw new MeshError('INVALID_ARGUMENT', `${what}.${k}: must be a non-negative integer`);
    return v;
  };
  const methods = (['httpGet', 'tcpSocket', 'grpc', 'exec'] as const).filter((m) => value[m] !== undefined && value[m] !== null);
  if (methods.length !== 1) throw new MeshError('INVALID_ARGUMENT', `${what}: needs exactly one of httpGet, tcpSocket, grpc, exec`);
  const m = methods[0]!;
  if (m === 'exec') {
    if (!Array.isArray(p.exec?.command) || p.exec.command.length === 0)
      throw new MeshError('INVALID_ARGUMENT', `${what}.exec.command is required`);
  } else {
    const port = (p[m] as { port?: unknown }).port;
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)
      throw new MeshError('INVALID_ARGUMENT', `${what}.${m}.port: must be a port number, got ${JSON.stringify(port)}`);
  }
  return {
    initialDelayMs: (typeof p.initialDelaySeconds === 'number' ? Math.max(0, p.initialDelaySeconds) : 0) * 1000,
    timeoutMs: n('timeoutSeconds', 1) * 1000,
    periodMs: n('periodSeconds', 10) * 1000,
    successThreshold: n('successThreshold', 1),
    failureThreshold: n('failureThreshold', 1),
    method: { [m]: p[m] } as ReadinessProbeJson,
  };
}

export interface ProbeResult {
  readonly healthy: boolean;
  readonly message: string;
}

function execProbe(command: readonly string[], timeoutMs: number): Promise<ProbeResult> {
  return new Promise((resolve) => {
    execFile(command[0]!, command.slice(1), { timeout: timeoutMs }, (err) =>
      resolve(err ? { healthy: false, message: `command ${command.join(' ')} failed: ${err.message}` } : { healthy: true, message: '' }),
    );
  });
}

/** One probe run against the workload at `host` (the VM's address, as pilot-agent's default host). */
export async function probeOnce(p: WorkloadProbe, host: string): Promise<ProbeResult> {
  const m = p.method;
  if (m.exec) return execProbe(m.exec.command, p.timeoutMs);
  const seconds = p.timeoutMs / 1000;
  const prober: AppProber = m.httpGet
    ? { httpGet: { ...m.httpGet, ...(m.httpGet.scheme ? { scheme: m.httpGet.scheme } : {}) }, timeoutSeconds: seconds }
    : m.tcpSocket
      ? { tcpSocket: m.tcpSocket, timeoutSeconds: seconds }
      : { grpc: m.grpc!, timeoutSeconds: seconds };
  const target = m.httpGet?.host || m.tcpSocket?.host || host;
  const code = await runAppProbe(prober, target, {});
  const kind = m.httpGet ? 'HTTP' : m.tcpSocket ? 'TCP' : 'gRPC';
  const port = m.httpGet?.port ?? m.tcpSocket?.port ?? m.grpc?.port;
  return code >= 200 && code < 400
    ? { healthy: true, message: '' }
    : { healthy: false, message: `${kind} probe of ${target}:${port} failed (status ${code})` };
}

/** pilot-agent's aggregate prober: Envoy not ready is unhealthy whatever the workload says. */
export async function envoyThenWorkload(
  envoy: { notReadyReason(): Promise<string | undefined> },
  p: WorkloadProbe,
  host: string,
): Promise<ProbeResult> {
  const reason = await envoy.notReadyReason();
  return reason !== undefined ? { healthy: false, message: `Envoy is not ready: ${reason}` } : probeOnce(p, host);
}

/** The HealthInformation requests of one state, SotW and Delta (istio-agent sends whichever the stream speaks). */
export function healthRequests(r: ProbeResult): { readonly sotw: Buffer; readonly delta: Buffer } {
  // gRPC's INTERNAL, as pilot-agent sends it.
  const errorDetail = r.healthy ? undefined : { code: 13, message: r.message };
  return {
    sotw: Buffer.from(
      toBinary(
        DiscoveryRequestSchema,
        create(DiscoveryRequestSchema, { typeUrl: TypeUrl.HealthInformation, ...(errorDetail ? { errorDetail } : {}) }),
      ),
    ),
    delta: Buffer.from(
      toBinary(
        DeltaDiscoveryRequestSchema,
        create(DeltaDiscoveryRequestSchema, { typeUrl: TypeUrl.HealthInformation, ...(errorDetail ? { errorDetail } : {}) }),
      ),
    ),
  };
}

export interface WorkloadHealthChecker {
  stop(): void;
}

/**
 * Probes until stopped; `report` hears each change of state (the first result once its threshold
 * is met, then every flip). Probes never overlap: the next is scheduled when one finishes.
 */
export function startWorkloadHealthChecker(
  p: WorkloadProbe,
  host: string,
  report: (r: ProbeResult) => void,
  log: Logger,
  probe: (p: WorkloadProbe, host: string) => Promise<ProbeResult> = probeOnce,
): WorkloadHealthChecker {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let successes = 0;
  let failures = 0;
  let last: 'healthy' | 'unhealthy' | undefined;
  const check = async (): Promise<void> => {
    const r = await probe(p, host);
    if (stopped) return;
    if (r.healthy) {
      successes++;
      failures = 0;
      if (successes >= p.successThreshold && last !== 'healthy') {
        log.info('readiness probe passed: reporting healthy');
        last = 'healthy';
        successes = 0;
        report(r);
      }
    } else {
      failures++;
      successes = 0;
      if (failures >= p.failureThreshold && last !== 'unhealthy') {
        log.info('readiness probe failed: reporting unhealthy', { error: r.message });
        last = 'unhealthy';
        failures = 0;
        report(r);
      }
    }
  };
  const loop = (delay: number): void => {
    timer = setTimeout(() => {
      void check().finally(() => {
        if (!stopped) loop(p.periodMs);
      });
    }, delay);
  };
  log.info('starting the workload health check', { host, initialDelayMs: p.initialDelayMs, periodMs: p.periodMs });
  loop(p.initialDelayMs);
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
