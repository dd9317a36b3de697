/** Semantic checks for DestinationRule (and the connection pool settings Sidecar shares). */
import type {
  ClientTLSSettings,
  ConnectionPoolSettings,
  DestinationRule,
  LoadBalancerSettings,
  LocalityLoadBalancerSetting,
  OutlierDetection,
  TrafficPolicy,
} from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import {
  ConnectionPoolSettings_HTTPSettings_H2UpgradePolicy,
  ClientTLSSettings_TLSmode,
} from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import {
  checkDurationField,
  checkExportTo,
  checkFQDN,
  checkLabels,
  checkPercent,
  checkPort,
  checkSelectorLabels,
  checkWildcardDomain,
  isDns1123Label,
  isIPAddress,
} from './common.js';
import type { ObjectContext } from './context.js';
import { field, index, key, type Issues } from './issues.js';

export function validateDestinationRule(dr: DestinationRule, ctx: ObjectContext, issues: Issues): void {
  const spec = 'spec';
  issues.check(field(spec, 'host'), checkWildcardDomain(dr.host));
  validateTrafficPolicy(issues, field(spec, 'trafficPolicy'), dr.trafficPolicy);
  const names = new Set<string>();
  dr.subsets.forEach((s, i) => {
    const p = index(field(spec, 'subsets'), i);
    if (s.name === '') issues.add(field(p, 'name'), 'subset name cannot be empty');
    else if (!isDns1123Label(s.name)) issues.add(field(p, 'name'), `subset name is invalid: ${s.name}`);
    else if (names.has(s.name)) issues.add(field(p, 'name'), `duplicate subset names: ${s.name}`);
    names.add(s.name);
    checkLabels(issues, field(p, 'labels'), s.labels);
    validateTrafficPolicy(issues, field(p, 'trafficPolicy'), s.trafficPolicy);
  });
  checkExportTo(issues, field(spec, 'exportTo'), ctx.namespace, dr.exportTo, false);
  if (dr.workloadSelector) {
    const p = field(field(spec, 'workloadSelector'), 'matchLabels');
    checkSelectorLabels(issues, p, dr.workloadSelector.matchLabels);
    // A selector-scoped rule only applies in its own namespace.
    const others = dr.exportTo.filter((e) => e !== '.' && e !== ctx.namespace);
    if (others.length > 0)
      issues.add(field(spec, 'exportTo'), 'destination rule with workload selector cannot have exportTo beyond current namespace');
    else if (dr.exportTo.length > 1)
      issues.add(field(spec, 'exportTo'), 'destination rule with workload selector cannot have multiple entries in exportTo');
  }
}

function validateTrafficPolicy(issues: Issues, path: string, tp: TrafficPolicy | undefined): void {
  if (!tp) return;
  if (
    !tp.outlierDetection &&
    !tp.connectionPool &&
    !tp.loadBalancer &&
    !tp.tls &&
    tp.portLevelSettings.length === 0 &&
    !tp.tunnel &&
    !tp.proxyProtocol &&
    !tp.retryBudget
  ) {
    issues.add(path, 'traffic policy must have at least one field');
    return;
  }
  if (tp.tunnel && tp.proxyProtocol) issues.add(path, 'tunnel and proxyProtocol must not be set together');
  validateOutlierDetection(issues, field(path, 'outlierDetection'), tp.outlierDetection);
  validateConnectionPool(issues, field(path, 'connectionPool'), tp.connectionPool);
  validateLoadBalancer(issues, field(path, 'loadBalancer'), tp.loadBalancer, tp.outlierDetection);
  validateClientTLS(issues, field(path, 'tls'), tp.tls);
  tp.portLevelSettings.forEach((pl, i) => {
    const p = index(field(path, 'portLevelSettings'), i);
    if (!pl.port) issues.add(field(p, 'port'), 'portTrafficPolicy must have valid port');
    else issues.check(field(field(p, 'port'), 'number'), checkPort(pl.port.number));
    if (!pl.outlierDetection && !pl.connectionPool && !pl.loadBalancer && !pl.tls) {
      issues.add(p, 'port traffic policy must have at least one field');
      return;
    }
    validateOutlierDetection(issues, field(p, 'outlierDetection'), pl.outlierDetection);
    validateConnectionPool(issues, field(p, 'connectionPool'), pl.connectionPool);
    validateLoadBalancer(issues, field(p, 'loadBalancer'), pl.loadBalancer, pl.outlierDetection);
    validateClientTLS(issues, field(p, 'tls'), pl.tls);
  });
  if (tp.tunnel) {
    const p = field(path, 'tunnel');
    const t = tp.tunnel;
    if (t.protocol !== '' && t.protocol !== 'CONNECT' && t.protocol !== 'POST')
      issues.add(field(p, 'protocol'), 'tunnel protocol must be "CONNECT" or "POST"');
    if (checkFQDN(t.targetHost) && !isIPAddress(t.targetHost))
      issues.add(field(p, 'targetHost'), `tunnel target host must be valid FQDN or IP address: ${t.targetHost}`);
    const portErr = checkPort(t.targetPort);
    if (portErr) issues.add(field(p, 'targetPort'), `tunnel target port is invalid: ${portErr}`);
  }
}

function validateOutlierDetection(issues: Issues, path: string, od: OutlierDetection | undefined): void {
  if (!od) return;
  checkDurationField(issues, field(path, 'baseEjectionTime'), od.baseEjectionTime);
  checkDurationField(issues, field(path, 'interval'), od.interval);
  if (od.consecutiveErrors !== 0) {
    issues.warn(
      field(path, 'consecutiveErrors'),
      'outlier detection consecutive errors is deprecated, use consecutiveGatewayErrors or consecutive5xxErrors instead',
    );
  }
  if (!od.splitExternalLocalOriginErrors && (od.consecutiveLocalOriginFailures ?? 0) > 0) {
    issues.add(
      field(path, 'consecutiveLocalOriginFailures'),
      'outlier detection consecutive local origin failures is specified, but split external local origin errors is set to false',
    );
  }
  issues.check(field(path, 'maxEjectionPercent'), checkPercent(od.maxEjectionPercent));
  issues.check(field(path, 'minHealthPercent'), checkPercent(od.minHealthPercent));
}

export function validateConnectionPool(issues: Issues, path: string, cp: ConnectionPoolSettings | undefined): void {
  if (!cp) return;
  if (!cp.http && !cp.tcp) {
    issues.add(path, 'connection pool must have at least one field');
    return;
  }
  const h = cp.http;
  if (h) {
    const p = field(path, 'http');
    const nonNegative = [
      'http1MaxPendingRequests',
      'http2MaxRequests',
      'maxRequestsPerConnection',
      'maxRetries',
      'maxConcurrentStreams',
    ] as const;
    for (const n of nonNegative) if (h[n] < 0) issues.add(field(p, n), `${n} must be non-negative`);
    checkDurationField(issues, field(p, 'idleTimeout'), h.idleTimeout);
    if (h.h2UpgradePolicy === ConnectionPoolSettings_HTTPSettings_H2UpgradePolicy.UPGRADE && h.useClientProtocol) {
      issues.add(field(p, 'useClientProtocol'), 'use client protocol must not be true when H2UpgradePolicy is UPGRADE');
    }
  }
  const t = cp.tcp;
  if (t) {
    const p = field(path, 'tcp');
    if (t.maxConnections < 0) issues.add(field(p, 'maxConnections'), 'max connections must be non-negative');
    checkDurationField(issues, field(p, 'connectTimeout'), t.connectTimeout);
    checkDurationField(issues, field(p, 'maxConnectionDuration'), t.maxConnectionDuration);
    checkDurationField(issues, field(p, 'idleTimeout'), t.idleTimeout);
    checkDurationField(issues, field(field(p, 'tcpKeepalive'), 'time'), t.tcpKeepalive?.time);
    checkDurationField(issues, field(field(p, 'tcpKeepalive'), 'interval'), t.tcpKeepalive?.interval);
  }
}

function isPrime(x: bigint): boolean {
  if (x !== 0n && x < 4n) return true;
  if (x % 2n === 0n) return false;
  for (let f = 3n; f * f <= x; f += 2n) if (x % f === 0n) return false;
  return true;
}

function validateLoadBalancer(
  issues: Issues,
  path: string,
  lb: LoadBalancerSettings | undefined,
  outlier: OutlierDetection | undefined,
): void {
  if (!lb) return;
  // simple vs consistentHash is a oneof: the schema already rejects both at once.
  if (lb.lbPolicy.case === 'consistentHash') {
    const ch = lb.lbPolicy.value;
    const p = field(path, 'consistentHash');
    if (ch.hashKey.case === 'httpCookie' && ch.hashKey.value.name === '')
      issues.add(field(field(p, 'httpCookie'), 'name'), 'name required for HttpCookie');
    if (ch.minimumRingSize !== 0n && ch.hashAlgorithm.case !== undefined) {
      issues.add(p, 'only one of MinimumRingSize or Maglev/Ringhash can be specified');
    }
    if (ch.minimumRingSize !== 0n) {
      issues.warn(
        field(p, 'minimumRingSize'),
        "consistent hash MinimumRingSize is deprecated, use ConsistentHashLB's RingHash configuration instead",
      );
    }
    if (ch.hashAlgorithm.case === 'maglev') {
      const size = ch.hashAlgorithm.value.tableSize;
      const tp = field(field(p, 'maglev'), 'tableSize');
      if (size === 0n) issues.add(tp, 'tableSize must be set for maglev');
      else if (size >= 5000011n) issues.add(tp, 'tableSize must be less than 5000011 for maglev');
      else if (!isPrime(size)) issues.add(tp, 'tableSize must be a prime number for maglev');
    }
  }
  validateLocalityLb(issues, field(path, 'localityLbSetting'), lb.localityLbSetting);
  // Failover moves traffic off endpoints outlier detection ejected: without it nothing fails over.
  for (const [name, setting] of [
    ['localityLbSetting', lb.localityLbSetting],
    ['zoneAwareLbSetting', lb.zoneAwareLbSetting],
  ] as const) {
    if (setting && (setting.failover.length > 0 || setting.failoverPriority.length > 0) && !outlier) {
      issues.warn(field(path, name), 'outlier detection policy must be provided for failover');
    }
  }
  checkDurationField(issues, field(path, 'warmupDurationSecs'), lb.warmupDurationSecs);
}

function validateLocalityLb(issues: Issues, path: string, l: LocalityLoadBalancerSetting | undefined): void {
  if (!l) return;
  if (l.distribute.length > 0 && l.failover.length > 0) {
    issues.add(path, "can not simultaneously specify 'distribute' and 'failover'");
    return;
  }
  l.distribute.forEach((d, i) => {
    const p = index(field(path, 'distribute'), i);
    let total = 0;
    for (const [loc, w] of Object.entries(d.to)) {
      if (w <= 0 || w > 100) issues.add(key(field(p, 'to'), loc), 'locality weight must be in range [1, 100]');
      total += w;
    }
    if (total !== 100) issues.add(field(p, 'to'), `total locality weight ${total} != 100`);
  });
  l.failover.forEach((f, i) => {
    const p = index(field(path, 'failover'), i);
    if (f.from === f.to) issues.add(p, 'locality lb failover settings must specify different regions');
    if (f.from.includes('/') || f.to.includes('/')) issues.add(p, 'locality lb failover only specify region');
    if (f.from.includes('*') || f.to.includes('*')) issues.add(p, "locality lb failover region should not contain '*' wildcard");
  });
}

function validateClientTLS(issues: Issues, path: string, tls: ClientTLSSettings | undefined): void {
  if (!tls) return;
  const simple = tls.mode === ClientTLSSettings_TLSmode.SIMPLE;
  const mutual = tls.mode === ClientTLSSettings_TLSmode.MUTUAL;
  if (tls.insecureSkipVerify === true) {
    if (simple && (tls.caCertificates !== '' || tls.credentialName !== '' || tls.subjectAltNames.length > 0)) {
      issues.add(path, 'cannot specify CaCertificates or CredentialName or SubjectAltNames when InsecureSkipVerify is set true');
    }
    if (mutual && (tls.caCertificates !== '' || tls.subjectAltNames.length > 0)) {
      issues.add(path, 'cannot specify CaCertificates or SubjectAltNames when InsecureSkipVerify is set true');
    }
  }
  if ((simple || mutual) && tls.credentialName !== '') {
    // The credential (a secret) carries the certificates; inline files would be ignored.
    if (tls.clientCertificate !== '' || tls.caCertificates !== '' || tls.privateKey !== '' || tls.caCrl !== '') {
      issues.add(path, 'cannot specify client certificates or CA certificate or CA CRL If credentialName is set');
    }
    return;
  }
  if (mutual) {
    if (tls.clientCertificate === '') issues.add(field(path, 'clientCertificate'), 'client certificate required for mutual tls');
    if (tls.privateKey === '') issues.add(field(path, 'privateKey'), 'private key required for mutual tls');
  }
}
