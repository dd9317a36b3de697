/**
 * istioctl's ztunnel-config output (istioctl/pkg/writer/ztunnel/configdump): the summary tables,
 * written with Go's tabwriter as istioctl sets it up (padding 1; the certificate table padding 5),
 * and the `-o json|yaml` dumps, encoded as encoding/json's MarshalIndent (4 spaces) and
 * sigs.k8s.io/yaml's JSONToYAML, each followed by a newline as Fprintln writes it.
 */
import { marshalJson, marshalYaml } from '../../template/index.js';
import { tabwrite } from '../proxy/tabwriter.js';
import {
  certificateJson,
  policyJson,
  serviceJson,
  workloadJson,
  workloadStateJson,
  type ZtunnelCert,
  type ZtunnelDump,
  type ZtunnelService,
  type ZtunnelWorkload,
  type ZtunnelWorkloadState,
} from './dump.js';

export type DumpFormat = 'json' | 'yaml';

export interface WorkloadFilter {
  readonly address?: string;
  readonly node?: string;
  readonly namespace?: string;
  /** A workload's pod name (the pod the user named, when it is not a ztunnel). */
  readonly name?: string;
}

export interface ConnectionsFilter {
  readonly namespace?: string;
  readonly direction?: string;
  readonly raw?: boolean;
  /** `name` or `name.namespace`. */
  readonly workload?: string;
}

const eqFold = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** encoding/json MarshalIndent(v, "", "    ") or its YAML, with Fprintln's newline. */
export function dumpAs(value: unknown, format: DumpFormat): string {
  const json = marshalJson(value, '    ');
  return (format === 'yaml' ? marshalYaml(JSON.parse(json)) : json) + '\n';
}

function workloadMatches(f: WorkloadFilter, w: ZtunnelWorkload): boolean {
  if (f.name && !eqFold(w.name, f.name)) return false;
  if (f.namespace && !eqFold(w.namespace, f.namespace)) return false;
  if (f.address && !w.workloadIps.some((ip) => eqFold(ip, f.address!))) return false;
  if (f.node && !eqFold(w.node, f.node)) return false;
  return true;
}

/** The name of the service a waypoint destination (`ns/hostname` or `network/ip`) points at: None without one, NA when unknown. */
function waypointName(destination: string | undefined, services: readonly ZtunnelService[]): string {
  if (destination === undefined) return 'None';
  for (const svc of services) {
    if (`${svc.namespace}/${svc.hostname}` === destination || svc.vips.includes(destination)) return svc.name;
  }
  return 'NA';
}

export function workloadSummary(d: ZtunnelDump, f: WorkloadFilter = {}): string {
  const wls = d.workloads
    .filter((w) => workloadMatches(f, w))
    .sort((a, b) => cmp(`${a.namespace}.${a.name}`, `${b.namespace}.${b.name}`) || cmp(a.node, b.node));
  const rows = [['NAMESPACE', 'POD NAME', 'ADDRESS', 'NODE', 'WAYPOINT', 'PROTOCOL']];
  for (const w of wls) {
    const address = w.workloadIps.join(',') || w.hostname;
    rows.push([w.namespace, w.name, address, w.node, waypointName(w.waypointDestination, d.services), w.protocol]);
  }
  return tabwrite(rows, 1);
}

export function workloadDump(d: ZtunnelDump, f: WorkloadFilter, format: DumpFormat): string {
  return dumpAs(d.workloads.filter((w) => workloadMatches(f, w)).map(workloadJson), format);
}

function sortedServices(d: ZtunnelDump, namespace: string | undefined): ZtunnelService[] {
  return d.services
    .filter((s) => !namespace || eqFold(s.namespace, namespace))
    .sort((a, b) => cmp(a.namespace, b.namespace) || cmp(a.name, b.name) || cmp(a.hostname, b.hostname));
}

export function serviceSummary(d: ZtunnelDump, namespace?: string): string {
  const byUid = new Map(d.workloads.map((w) => [w.uid, w]));
  const rows = [['NAMESPACE', 'SERVICE NAME', 'SERVICE VIP', 'WAYPOINT', 'ENDPOINTS']];
  for (const svc of sortedServices(d, namespace)) {
    // A vip is `network/ip`; istioctl prints what follows the slash (nothing when there is none).
    const ips = svc.vips.map((v) => (v.includes('/') ? v.slice(v.indexOf('/') + 1) : ''));
    const healthy = svc.endpointWorkloads.filter((uid) => byUid.get(uid)?.status === 'Healthy').length;
    rows.push([
      svc.namespace,
      svc.name,
      ips.join(','),
      waypointName(svc.waypointDestination, d.services),
      `${healthy}/${svc.endpointWorkloads.length}`,
    ]);
  }
  return tabwrite(rows, 1);
}

export function serviceDump(d: ZtunnelDump, namespace: string | undefined, format: DumpFormat): string {
  return dumpAs(sortedServices(d, namespace).map(serviceJson), format);
}

function sortedPolicies(d: ZtunnelDump, namespace: string | undefined): ZtunnelDump['policies'][number][] {
  return d.policies
    .filter((p) => !namespace || eqFold(p.namespace, namespace))
    .sort((a, b) => cmp(a.namespace, b.namespace) || cmp(a.name, b.name));
}

export function policySummary(d: ZtunnelDump, namespace?: string): string {
  return tabwrite(
    [['NAMESPACE', 'POLICY NAME', 'ACTION', 'SCOPE'], ...sortedPolicies(d, namespace).map((p) => [p.namespace, p.name, p.action, p.scope])],
    1,
  );
}

export function policyDump(d: ZtunnelDump, namespace: string | undefined, format: DumpFormat): string {
  return dumpAs(sortedPolicies(d, namespace).map(policyJson), format);
}

const valueOrNA = (v: string): string => (v === '' ? 'NA' : v);

/** RFC 3339 as Go's time.Parse takes it (undefined when it does not parse). */
function rfc3339(s: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(s)) return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
}

function certValid(c: ZtunnelCert, now: number): boolean {
  if (c.expirationTime === '' && c.validFrom === '') return false;
  const to = rfc3339(c.expirationTime);
  const from = rfc3339(c.validFrom);
  return to !== undefined && from !== undefined && now > from && now < to;
}

/** big.Int's %x of a decimal serial number; `<nil>` when it is not one, as Go prints a nil *big.Int. */
function serialHex(serial: string): string {
  return /^[+-]?\d+$/.test(serial) ? BigInt(serial).toString(16) : '<nil>';
}

export function certificateSummary(d: ZtunnelDump, now: number = Date.now()): string {
  const rows = [['CERTIFICATE NAME', 'TYPE', 'STATUS', 'VALID CERT', 'SERIAL NUMBER', 'NOT AFTER', 'NOT BEFORE']];
  for (const c of d.certificates ?? []) {
    const state = c.state.includes('Unavailable') ? 'Unavailable' : c.state;
    if (c.certChain.length === 0) {
      rows.push([c.identity, 'NA', state, 'false', 'NA', 'NA', 'NA']);
      continue;
    }
    // Older ztunnels put the root at the end of the chain and had no rootCerts.
    const legacy = c.rootCerts.length === 0;
    const row = (type: string, cert: ZtunnelCert): string[] => [
      c.identity,
      type,
      state,
      String(certValid(cert, now)),
      serialHex(cert.serialNumber),
      valueOrNA(cert.expirationTime),
      valueOrNA(cert.validFrom),
    ];
    c.certChain.forEach((cert, i) =>
      rows.push(row(i === 0 ? 'Leaf' : i === c.certChain.length - 1 && legacy ? 'Root' : 'Intermediate', cert)),
    );
    for (const cert of c.rootCerts) rows.push(row('Root', cert));
  }
  return tabwrite(rows, 5);
}

export function certificateDump(d: ZtunnelDump, format: DumpFormat): string {
  return dumpAs(d.certificates === undefined ? null : d.certificates.map(certificateJson), format);
}

function normalise(f: ConnectionsFilter): ConnectionsFilter {
  if (f.workload && !f.namespace) {
    const i = f.workload.indexOf('.');
    if (i >= 0) return { ...f, workload: f.workload.slice(0, i), namespace: f.workload.slice(i + 1) };
  }
  return f;
}

function selectedStates(d: ZtunnelDump, f: ConnectionsFilter): ZtunnelWorkloadState[] {
  return d.workloadStates
    .filter((s) => (!f.namespace || f.namespace === s.namespace) && (!f.workload || eqFold(f.workload, s.name)))
    .sort((a, b) => cmp(a.namespace, b.namespace) || cmp(a.name, b.name));
}

/** Go's net.SplitHostPort/JoinHostPort for `ip:port` and `[v6]:port`. */
function splitHostPort(addr: string): [string, string] | undefined {
  const m = /^\[([^\]]*)\]:(\d*)$/.exec(addr) ?? /^([^:[\]]*):(\d*)$/.exec(addr);
  return m ? [m[1]!, m[2]!] : undefined;
}
const joinHostPort = (host: string, port: string): string => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

export function connectionsSummary(d: ZtunnelDump, filter: ConnectionsFilter = {}): string {
  const f = normalise(filter);
  const services = new Map<string, string>();
  for (const s of d.services) {
    const first = s.vips[0];
    const ip = first === undefined ? '' : first.includes('/') ? first.slice(first.indexOf('/') + 1) : '';
    services.set(ip || 'None', s.hostname);
  }
  const workloads = new Map<string, string>();
  for (const w of d.workloads) workloads.set(w.workloadIps[0] || 'None', `${w.name}.${w.namespace}`);
  const lookup = (addr: string): string => {
    if (f.raw) return addr;
    const [ip, port] = splitHostPort(addr) ?? ['', ''];
    const name = services.get(ip) ?? workloads.get(ip);
    return name === undefined ? addr : joinHostPort(name, port);
  };
  const rows = [['WORKLOAD', 'DIRECTION', 'LOCAL', 'REMOTE', 'REMOTE TARGET', 'PROTOCOL']];
  for (const s of selectedStates(d, f)) {
    const name = `${s.name}.${s.namespace}`;
    if (f.direction !== 'outbound')
      for (const c of s.inbound) rows.push([name, 'Inbound', lookup(c.actualDst), lookup(c.src), c.originalDst, c.protocol]);
    if (f.direction !== 'inbound')
      for (const c of s.outbound) rows.push([name, 'Outbound', lookup(c.src), lookup(c.actualDst), lookup(c.originalDst), c.protocol]);
  }
  return tabwrite(rows, 1);
}

export function connectionsDump(d: ZtunnelDump, filter: ConnectionsFilter, format: DumpFormat): string {
  return dumpAs(selectedStates(d, normalise(filter)).map(workloadStateJson), format);
}

/** `all`: every summary, each after a blank line (and a `------ X INFO ------` banner with headers). */
export function fullSummary(d: ZtunnelDump, withHeaders: boolean, now?: number): string {
  const part = (title: string, body: string): string => '\n' + (withHeaders ? `------ ${title} ------\n\n` : '') + body;
  return (
    part('WORKLOAD INFO', workloadSummary(d)) +
    part('SERVICE INFO', serviceSummary(d)) +
    part('POLICY INFO', policySummary(d)) +
    part('SECRET INFO', certificateSummary(d, now)) +
    part('CONNECTIONS INFO', connectionsSummary(d))
  );
}

/** `all -o json|yaml`: the dump as it came (YAML: converted as JSONToYAML does). */
export function fullDump(d: ZtunnelDump, format: DumpFormat): string {
  return (format === 'yaml' ? marshalYaml(d.parsed) : d.text) + '\n';
}
