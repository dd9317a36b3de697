import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { SecretSchema, type Secret } from '../../gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import { buildGatewaySecrets } from './gateway-secrets.js';
import { CLIENT_CA, NS, router, SERVER_CERT, SERVER_KEY } from '../../../test/support/networking/gateway-fixtures.js';
import { parseKubernetesSecret, type CredentialLookup, type TlsCredential } from '../../model/kubernetes-secret.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const secretDoc = (name: string, data: Record<string, string>, opts: { stringData?: Record<string, string>; namespace?: string } = {}) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  type: 'kubernetes.io/tls',
  metadata: { name, namespace: opts.namespace ?? NS },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  ...(opts.stringData ? { stringData: opts.stringData } : {}),
});

function parsed(doc: unknown): TlsCredential {
  const r = parseKubernetesSecret(doc);
  assert.ok(r.ok, JSON.stringify(!r.ok && r.errors));
  return r.value.credential;
}

function errorsOf(doc: unknown): string {
  const r = parseKubernetesSecret(doc);
  assert.ok(!r.ok, 'expected an error');
  return r.errors.join('\n');
}

function lookup(docs: unknown[]): CredentialLookup {
  const m = new Map<string, TlsCredential>();
  for (const d of docs) {
    const r = parseKubernetesSecret(d);
    assert.ok(r.ok, JSON.stringify(!r.ok && r.errors));
    m.set(`${r.value.namespace}/${r.value.name}`, r.value.credential);
  }
  return { get: (ns, name) => m.get(`${ns}/${name}`) };
}

const text = (ds: { specifier: { case: string | undefined; value?: unknown } } | undefined): string =>
  ds?.specifier.case === 'inlineBytes' ? new TextDecoder().decode(ds.specifier.value as Uint8Array) : '';
const decode = (s: Secret): Secret => fromBinary(SecretSchema, toBinary(SecretSchema, s));

describe('parseKubernetesSecret', () => {
  it('reads kubernetes.io/tls keys from base64 data, and the generic keys from stringData', () => {
    const tls = parsed(secretDoc('bookinfo-cred', { 'tls.crt': SERVER_CERT, 'tls.key': SERVER_KEY, 'ca.crt': CLIENT_CA }));
    assert.deepEqual([tls.certChain, tls.privateKey, tls.caCert], [SERVER_CERT, SERVER_KEY, CLIENT_CA]);
    const generic = parsed(secretDoc('generic', {}, { stringData: { cert: SERVER_CERT, key: SERVER_KEY } }));
    assert.deepEqual([generic.certChain, generic.privateKey, generic.caCert], [SERVER_CERT, SERVER_KEY, undefined]);
  });

  it('a Secret with only a CA bundle is the `-cacert` form', () => {
    const ca = parsed(secretDoc('bookinfo-cred-cacert', { cacert: CLIENT_CA }));
    assert.deepEqual([ca.certChain, ca.privateKey, ca.caCert], ['', '', CLIENT_CA]);
  });

  it('says what is wrong and where', () => {
    assert.match(
      errorsOf(secretDoc('s', { 'tls.crt': SERVER_CERT })),
      /Secret istio-system\/s: expected keys \(cert and key\) or \(tls\.crt and tls\.key\).*found: tls\.crt/,
    );
    assert.match(errorsOf(secretDoc('s', { 'tls.crt': '', 'tls.key': '' })), /found keys "tls\.crt" and "tls\.key", but they were empty/);
    assert.match(errorsOf(secretDoc('s', { 'tls.crt': 'hello', 'tls.key': SERVER_KEY })), /data\["tls\.crt"\] is not a PEM certificate/);
    assert.match(
      errorsOf(secretDoc('s', { 'tls.crt': SERVER_CERT, 'tls.key': SERVER_CERT })),
      /data\["tls\.key"\] is not a PEM private key/,
    );
    assert.match(errorsOf({ ...secretDoc('s', {}), data: { 'tls.crt': '***' } }), /data\["tls\.crt"\] is not base64/);
    assert.match(errorsOf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }), /expected apiVersion v1, kind Secret/);
  });
});

describe('buildGatewaySecrets', () => {
  const proxy = router();
  const creds = lookup([
    secretDoc('bookinfo-cred', { 'tls.crt': SERVER_CERT, 'tls.key': SERVER_KEY, 'ca.crt': CLIENT_CA }),
    secretDoc('split', { 'tls.crt': SERVER_CERT, 'tls.key': SERVER_KEY }),
    secretDoc('split-cacert', { cacert: CLIENT_CA }),
    secretDoc('elsewhere', { 'tls.crt': SERVER_CERT, 'tls.key': SERVER_KEY }, { namespace: 'other' }),
  ]);

  it('serves the certificate and the CA of a credential; the CA from `<name>-cacert` or, failing that, from the Secret itself', () => {
    const out = buildGatewaySecrets(
      creds,
      { proxy },
      new Set(['kubernetes://bookinfo-cred', 'kubernetes://bookinfo-cred-cacert', 'kubernetes://split-cacert']),
    ).map(decode);
    assert.deepEqual(
      out.map((s) => [s.name, s.type.case]),
      [
        ['kubernetes://bookinfo-cred', 'tlsCertificate'],
        ['kubernetes://bookinfo-cred-cacert', 'validationContext'],
        ['kubernetes://split-cacert', 'validationContext'],
      ],
    );
    const cert = out[0]!.type;
    assert.ok(cert.case === 'tlsCertificate');
    assert.deepEqual([text(cert.value.certificateChain), text(cert.value.privateKey)], [SERVER_CERT, SERVER_KEY]);
    for (const s of out.slice(1)) {
      assert.ok(s.type.case === 'validationContext');
      assert.equal(text(s.type.value.trustedCa), CLIENT_CA);
    }
  });

  it('missing, cross-namespace and non-kubernetes names yield no resource', () => {
    const out = buildGatewaySecrets(
      creds,
      { proxy },
      new Set(['kubernetes://missing', 'kubernetes://missing-cacert', 'kubernetes://other/elsewhere', 'kubernetes://elsewhere', 'default']),
    );
    assert.deepEqual(
      out.map((s) => s.name),
      [],
    );
    const own = buildGatewaySecrets(creds, { proxy: router(undefined, 'other') }, new Set(['kubernetes://other/elsewhere']));
    assert.deepEqual(
      own.map((s) => s.name),
      ['kubernetes://other/elsewhere'],
      'explicit namespace = the proxy’s own is fine',
    );
  });
});
