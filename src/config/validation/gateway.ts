/** Gateway checks: the obvious ones from istiod (servers, hosts, ports, TLS settings). */
import {
  ServerTLSSettings_TLSmode,
  ServerTLSSettings_TLSProtocol,
  type Gateway,
  type ServerTLSSettings,
} from '../../gen/networking/v1alpha3/gateway_pb.js';
import {
  checkNamespaceSlashHost,
  checkPort,
  checkUnixAddress,
  isDns1123Label,
  isHTTPProtocol,
  isIPAddress,
  isTLSProtocol,
  parseProtocol,
} from './common.js';
import type { ObjectContext } from './context.js';
import { field, index, type Issues } from './issues.js';

const UNIX_PREFIX = 'unix://';

export function validateGateway(gw: Gateway, ctx: ObjectContext, issues: Issues): void {
  // Gateways are referenced as `namespace/name`, so the name must be a DNS label (no dots).
  if (!isDns1123Label(ctx.name)) issues.add('metadata.name', `invalid gateway name: "${ctx.name}"`);
  const servers = field('spec', 'servers');
  if (gw.servers.length === 0) issues.add(servers, 'gateway must have at least one server');
  const portNames = new Set<string>();
  gw.servers.forEach((s, i) => {
    const p = index(servers, i);
    if (s.hosts.length === 0) issues.add(field(p, 'hosts'), 'server config must contain at least one host');
    s.hosts.forEach((h, j) => {
      for (const err of checkNamespaceSlashHost(h, true)) issues.add(index(field(p, 'hosts'), j), err);
    });
    const unixBind = s.bind.startsWith(UNIX_PREFIX);
    if (unixBind) {
      issues.check(field(p, 'bind'), checkUnixAddress(s.bind.slice(UNIX_PREFIX.length)));
      if (s.port && s.port.number !== 0) issues.add(field(field(p, 'port'), 'number'), 'port number must be 0 for unix domain socket');
    } else if (s.bind !== '' && !isIPAddress(s.bind)) {
      issues.add(field(p, 'bind'), `${s.bind} is not a valid IP`);
    }
    if (!s.port) {
      issues.add(field(p, 'port'), 'port is required');
      return;
    }
    const pp = field(p, 'port');
    const proto = parseProtocol(s.port.protocol);
    if (!proto)
      issues.add(
        field(pp, 'protocol'),
        `invalid protocol "${s.port.protocol}", supported protocols are HTTP, HTTP2, GRPC, GRPC-WEB, MONGO, REDIS, MYSQL, TCP`,
      );
    if (s.port.number > 0 || !unixBind) issues.check(field(pp, 'number'), checkPort(s.port.number));
    if (s.port.name === '') issues.add(field(pp, 'name'), 'port name must be set');
    else if (portNames.has(s.port.name))
      issues.add(field(pp, 'name'), `port names in servers must be unique: duplicate name ${s.port.name}`);
    portNames.add(s.port.name);
    validateServerTLS(issues, field(p, 'tls'), s.tls);
    if (s.tls?.httpsRedirect && !isHTTPProtocol(proto)) {
      issues.warn(field(field(p, 'tls'), 'httpsRedirect'), 'tls.httpsRedirect should only be used with http servers');
    }
    if (proto) {
      if (isTLSProtocol(proto) && !s.tls) issues.add(field(p, 'tls'), 'server must have TLS settings for HTTPS/TLS protocols');
      else if (!isTLSProtocol(proto) && s.tls) {
        const redirectOnly =
          s.tls.httpsRedirect && s.tls.serverCertificate === '' && s.tls.privateKey === '' && s.tls.caCertificates === '';
        if (!isHTTPProtocol(proto)) issues.add(field(p, 'tls'), 'server cannot have TLS settings for non HTTPS/TLS ports');
        else if (!redirectOnly) issues.add(field(p, 'tls'), 'server cannot have TLS settings for plain text HTTP ports');
      }
    }
  });
}

/** Server-side TLS rules; also used for Sidecar ingress listeners. */
export function validateServerTLS(issues: Issues, path: string, tls: ServerTLSSettings | undefined): void {
  if (!tls) return;
  const M = ServerTLSSettings_TLSmode;
  warnTLSOptions(issues, path, tls);
  if (tls.mode === M.ISTIO_MUTUAL) {
    // Istio supplies the workload certificate itself.
    if (tls.serverCertificate !== '')
      issues.add(field(path, 'serverCertificate'), 'ISTIO_MUTUAL TLS cannot have associated server certificate');
    if (tls.privateKey !== '') issues.add(field(path, 'privateKey'), 'ISTIO_MUTUAL TLS cannot have associated private key');
    if (tls.caCertificates !== '') issues.add(field(path, 'caCertificates'), 'ISTIO_MUTUAL TLS cannot have associated CA bundle');
    if (tls.credentialName !== '') issues.add(field(path, 'credentialName'), 'ISTIO_MUTUAL TLS cannot have associated credentialName');
    return;
  }
  const usesCredential = tls.credentialName !== '' || tls.credentialNames.length > 0 || tls.tlsCertificates.length > 0;
  if ((tls.mode === M.SIMPLE || tls.mode === M.MUTUAL || tls.mode === M.OPTIONAL_MUTUAL) && usesCredential) return;
  if (tls.mode === M.SIMPLE) {
    if (tls.serverCertificate === '') issues.add(field(path, 'serverCertificate'), 'SIMPLE TLS requires a server certificate');
    if (tls.privateKey === '') issues.add(field(path, 'privateKey'), 'SIMPLE TLS requires a private key');
  } else if (tls.mode === M.MUTUAL || tls.mode === M.OPTIONAL_MUTUAL) {
    if (tls.serverCertificate === '') issues.add(field(path, 'serverCertificate'), 'MUTUAL TLS requires a server certificate');
    if (tls.privateKey === '') issues.add(field(path, 'privateKey'), 'MUTUAL TLS requires a private key');
    if (tls.caCertificates === '') issues.add(field(path, 'caCertificates'), 'MUTUAL TLS requires a client CA bundle');
  }
  if (tls.caCrl !== '' && tls.mode === M.SIMPLE) issues.add(field(path, 'caCrl'), 'CRL is not supported with SIMPLE TLS');
}

/**
 * The cipher suites a gateway may name (BoringSSL's, as istio pkg/config/security lists them);
 * Envoy would reject another, so istiod drops it with a warning.
 */
const VALID_CIPHER_SUITES = new Set([
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
  'ECDHE-ECDSA-AES128-SHA',
  'ECDHE-RSA-AES128-SHA',
  'ECDHE-ECDSA-AES256-SHA',
  'ECDHE-RSA-AES256-SHA',
  'AES128-GCM-SHA256',
  'AES256-GCM-SHA384',
  'AES128-SHA',
  'AES256-SHA',
  'DES-CBC3-SHA',
]);

/** `ALL`, an operator expression (`-`, `+`, `!`, `[`…) istiod does not parse, or a known suite. */
const isValidCipherSuite = (cs: string): boolean => cs === '' || cs === 'ALL' || !/^[\p{L}\p{N}]/u.test(cs) || VALID_CIPHER_SUITES.has(cs);

/** Go's `%v` of a sorted string list: `[a b]`. */
const goList = (items: Iterable<string>): string => `[${[...items].sort().join(' ')}]`;

/** istiod's TLS warnings: settings accepted but ignored (or that need another setting to work). */
function warnTLSOptions(issues: Issues, path: string, tls: ServerTLSSettings): void {
  const V = ServerTLSSettings_TLSProtocol;
  const M = ServerTLSSettings_TLSmode;
  if ((tls.minProtocolVersion === V.TLSV1_0 || tls.minProtocolVersion === V.TLSV1_1) && tls.cipherSuites.length === 0) {
    issues.warn(
      field(path, 'minProtocolVersion'),
      'TLS version below TLSV1_2 require setting compatible ciphers as by default they no longer include compatible ciphers.',
    );
  }
  const invalid = new Set<string>();
  const valid = new Set<string>();
  const duplicate = new Set<string>();
  for (const cs of tls.cipherSuites) {
    if (!isValidCipherSuite(cs)) invalid.add(cs);
    else if (valid.has(cs)) duplicate.add(cs);
    else valid.add(cs);
  }
  const ciphers = field(path, 'cipherSuites');
  if (invalid.size > 0) issues.warn(ciphers, `ignoring invalid cipher suites: ${goList(invalid)}`);
  if (duplicate.size > 0) issues.warn(ciphers, `ignoring duplicate cipher suites: ${goList(duplicate)}`);
  if (tls.mode === M.ISTIO_MUTUAL) return;
  const hasCertificates =
    tls.caCrl !== '' ||
    tls.serverCertificate !== '' ||
    tls.privateKey !== '' ||
    tls.caCertificates !== '' ||
    tls.tlsCertificates.length > 0 ||
    tls.credentialName !== '' ||
    tls.credentialNames.length > 0;
  if ((tls.mode === M.PASSTHROUGH || tls.mode === M.AUTO_PASSTHROUGH) && hasCertificates) {
    issues.warn(path, `${M[tls.mode]} mode does not use certificates, they will be ignored`);
  }
  if ((tls.mode === M.SIMPLE || tls.mode === M.MUTUAL || tls.mode === M.OPTIONAL_MUTUAL) && tls.tlsCertificates.length > 2) {
    const prefix = tls.mode === M.SIMPLE ? 'SIMPLE TLS' : 'MUTUAL TLS';
    issues.warn(field(path, 'tlsCertificates'), `${prefix} can support up to 2 server certificates`);
  }
}
