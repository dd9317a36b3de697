/** Sidecar checks: the obvious ones from istiod (listeners, ports, `namespace/host` egress hosts). */
import { OutboundTrafficPolicy_Mode, type Sidecar, type SidecarPort } from '../../gen/networking/v1alpha3/sidecar_pb.js';
import { ServerTLSSettings_TLSmode } from '../../gen/networking/v1alpha3/gateway_pb.js';
import {
  checkFQDN,
  checkNamespaceSlashHost,
  checkPort,
  checkPortName,
  checkProtocol,
  alphaSelectorWarning,
  checkSelectorLabels,
  checkUnixAddress,
  isHTTPProtocol,
  isIPAddress,
  parseProtocol,
} from './common.js';
import type { ObjectContext } from './context.js';
import { validateConnectionPool } from './destination-rule.js';
import { validateServerTLS } from './gateway.js';
import { field, index, type Issues } from './issues.js';

const UNIX_PREFIX = 'unix://';

export function validateSidecar(sc: Sidecar, ctx: ObjectContext, issues: Issues): void {
  const spec = 'spec';
  if (sc.workloadSelector) {
    const labels = field(field(spec, 'workloadSelector'), 'labels');
    checkSelectorLabels(issues, labels, sc.workloadSelector.labels, alphaSelectorWarning('sidecar'));
  }
  if (sc.egress.length === 0 && sc.ingress.length === 0 && !sc.outboundTrafficPolicy && !sc.inboundConnectionPool) {
    issues.add(spec, 'sidecar: empty configuration provided');
    return;
  }

  const ingressPorts = new Set<number>();
  sc.ingress.forEach((ing, i) => {
    const p = index(field(spec, 'ingress'), i);
    if (!ing.port) {
      issues.add(field(p, 'port'), 'sidecar: port is required for ingress listeners');
      return;
    }
    checkSidecarPort(issues, field(p, 'port'), ing.port, ing.bind, false);
    if (ingressPorts.has(ing.port.number))
      issues.add(field(field(p, 'port'), 'number'), 'sidecar: ports on IP bound listeners must be unique');
    ingressPorts.add(ing.port.number);
    if (ing.defaultEndpoint !== '') issues.check(field(p, 'defaultEndpoint'), checkDefaultEndpoint(ing.defaultEndpoint));
    if (ing.tls) {
      const tp = field(p, 'tls');
      if (ing.tls.subjectAltNames.length > 0) issues.add(tp, 'sidecar: subjectAltNames is not supported in ingress tls');
      if (ing.tls.httpsRedirect) issues.add(tp, 'sidecar: httpsRedirect is not supported');
      if (ing.tls.credentialName !== '') issues.add(tp, 'sidecar: credentialName is not currently supported');
      const mode = ing.tls.mode;
      if (mode === ServerTLSSettings_TLSmode.ISTIO_MUTUAL || mode === ServerTLSSettings_TLSmode.AUTO_PASSTHROUGH) {
        issues.add(
          field(tp, 'mode'),
          `configuration is invalid: cannot set mode to ${ServerTLSSettings_TLSmode[mode]} in sidecar ingress tls`,
        );
      }
      validateServerTLS(issues, tp, ing.tls);
    }
    validateConnectionPool(issues, field(p, 'connectionPool'), ing.connectionPool);
    if (ing.connectionPool?.http && !isHTTPProtocol(parseProtocol(ing.port.protocol))) {
      issues.warn(
        field(field(p, 'connectionPool'), 'http'),
        `sidecar: HTTP connection pool settings are configured for port ${ing.port.number} (${JSON.stringify(ing.port.name)}) ` +
          `but its protocol is not HTTP (${ing.port.protocol}); only TCP settings will apply`,
      );
    }
  });
  validateConnectionPool(issues, field(spec, 'inboundConnectionPool'), sc.inboundConnectionPool);

  const egressPorts = new Set<number>();
  const sockets = new Set<string>();
  let catchAll = false;
  sc.egress.forEach((eg, i) => {
    const p = index(field(spec, 'egress'), i);
    if (!eg.port) {
      // At most one listener without a port (the catch-all), and it must come last.
      if (catchAll) issues.add(p, 'sidecar: egress can have only one listener with empty port');
      else if (i !== sc.egress.length - 1)
        issues.add(p, 'sidecar: the egress listener with empty port should be the last listener in the list');
      catchAll = true;
    } else {
      checkSidecarPort(issues, field(p, 'port'), eg.port, eg.bind, true);
      if (eg.port.number === 0) {
        if (sockets.has(eg.bind)) issues.add(field(p, 'bind'), 'sidecar: unix domain socket values for listeners must be unique');
        sockets.add(eg.bind);
      } else {
        if (egressPorts.has(eg.port.number))
          issues.add(field(field(p, 'port'), 'number'), 'sidecar: ports on IP bound listeners must be unique');
        egressPorts.add(eg.port.number);
      }
    }
    if (eg.hosts.length === 0) issues.add(field(p, 'hosts'), 'sidecar: egress listener must contain at least one host');
    eg.hosts.forEach((h, j) => {
      for (const err of checkNamespaceSlashHost(h, false)) issues.add(index(field(p, 'hosts'), j), err);
    });
    warnDuplicateEgressHosts(issues, field(p, 'hosts'), eg.hosts, ctx.namespace);
  });

  const otp = sc.outboundTrafficPolicy;
  if (otp?.egressProxy) {
    const p = field(field(spec, 'outboundTrafficPolicy'), 'egressProxy');
    if (otp.mode !== OutboundTrafficPolicy_Mode.ALLOW_ANY) {
      issues.add(p, 'sidecar: egress_proxy must be set only with ALLOW_ANY outbound_traffic_policy mode');
    } else {
      issues.check(field(p, 'host'), checkFQDN(otp.egressProxy.host));
      if (!otp.egressProxy.port) issues.add(field(p, 'port'), 'sidecar: egress_proxy port must be non-nil');
      else issues.check(field(field(p, 'port'), 'number'), checkPort(otp.egressProxy.port.number));
    }
  }
}

function checkSidecarPort(issues: Issues, path: string, port: SidecarPort, bind: string, egress: boolean): void {
  if (port.name !== '') issues.check(field(path, 'name'), checkPortName(port.name));
  issues.check(field(path, 'protocol'), checkProtocol(port.protocol));
  if (egress && port.number === 0) {
    // Port 0 means "listen on a unix domain socket".
    if (!bind.startsWith(UNIX_PREFIX))
      issues.add(field(path, 'number'), 'sidecar: ports with 0 value must have a unix domain socket bind address');
    else issues.check(field(path, 'number'), checkUnixAddress(bind.slice(UNIX_PREFIX.length)));
    return;
  }
  issues.check(field(path, 'number'), checkPort(port.number));
  if (bind !== '' && !isIPAddress(bind)) issues.add(path, `${bind} is not a valid IP`);
}

/** `127.0.0.1:port`, `0.0.0.0:port`, `[::1]:port`, `[::]:port`, `:port` or `unix://path`. */
function checkDefaultEndpoint(ep: string): string | undefined {
  if (ep.startsWith(UNIX_PREFIX)) return checkUnixAddress(ep.slice(UNIX_PREFIX.length));
  const m = /^(?:\[([^\]]*)\]|([^:[\]]*)):(\d+)$/.exec(ep);
  if (!m) return `sidecar: defaultEndpoint ${ep} is not of form host:port`;
  const host = m[1] ?? m[2] ?? '';
  if (host !== '' && !['127.0.0.1', '0.0.0.0', '::1', '::'].includes(host)) {
    return 'sidecar: defaultEndpoint must be of form 127.0.0.1:<port>,0.0.0.0:<port>,[::1]:port,[::]:port,unix://filepath or unset';
  }
  return checkPort(Number(m[3]));
}

/**
 * istiod's warnings for one egress listener's hosts: a `namespace/host` given twice (or under a
 * `namespace/*` already given), and a host selecting every namespace and service beside other hosts.
 */
function warnDuplicateEgressHosts(issues: Issues, path: string, hosts: readonly string[], namespace: string): void {
  const byNamespace = new Map<string, Set<string>>();
  hosts.forEach((h, i) => {
    const slash = h.indexOf('/');
    if (slash < 0 || h.startsWith('~')) return;
    const ns = h.startsWith('./') ? namespace : h.slice(0, slash);
    const svc = h.slice(slash + 1);
    const seen = byNamespace.get(ns) ?? new Set<string>();
    byNamespace.set(ns, seen);
    const duplicate = svc !== '*' ? seen.has(svc) || seen.has('*') : seen.size > 0;
    if (duplicate) issues.warn(index(path, i), `duplicated egress host: ${h}`);
    seen.add(svc);
  });
  if (byNamespace.get('*')?.has('*') && byNamespace.size !== 1) {
    issues.warn(path, '`*/*` host select all resources, no other hosts can be added');
  }
}
