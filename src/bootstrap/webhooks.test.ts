/**
 * The webhook server inside `meshpilot discovery`: the serving certificate comes from the secure
 * gRPC server (same names as 15012, plus ISTIOD_CUSTOM_HOST), and a root rotation reaches new
 * HTTPS connections without a restart.
 */
import assert from 'node:assert/strict';
import { request } from 'node:https';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { captureLogs, tempDir, type TempDir } from '../security/test-helpers.js';
import { startDiscovery, type RunningDiscovery } from './discovery.js';
import { parseDiscoveryOptions } from './options.js';

const logs = captureLogs();
let dir: TempDir;
let running: RunningDiscovery;

interface Served {
  readonly status: number;
  readonly sans: string;
  readonly issuerFingerprint: string;
}

/** GET /httpsReady over a fresh TLS connection that trusts only `trustPem`. */
function ready(trustPem: string, servername = 'istiod.istio-system.svc'): Promise<Served> {
  const [host, port] = running.webhookAddress!.split(':') as [string, string];
  return new Promise((resolve, reject) => {
    const req = request({ host, port: Number(port), path: '/httpsReady', servername, ca: trustPem, agent: false }, (res) => {
      const peer = (res.socket as TLSSocket).getPeerCertificate(true);
      res.resume();
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, sans: peer.subjectaltname ?? '', issuerFingerprint: peer.issuerCertificate.fingerprint256 }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const firstPem = (bundle: string): string => /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/.exec(bundle)?.[0] ?? '';

before(async () => {
  dir = await tempDir();
  const argv = [
    '--configDir',
    dir.path,
    '--grpcAddr',
    '127.0.0.1:0',
    '--httpAddr',
    '127.0.0.1:0',
    '--monitoringAddr',
    '127.0.0.1:0',
    '--secureGRPCAddr',
    '127.0.0.1:0',
    '--httpsAddr',
    '127.0.0.1:0',
    '--shutdownDuration',
    '1s',
  ];
  const opts = parseDiscoveryOptions(argv, { ISTIOD_CUSTOM_HOST: 'localhost,127.0.0.1', ROOT_CA_DIR: path.join(dir.path, 'no-cacerts') });
  running = await startDiscovery(opts, logs.logger);
});
after(async () => {
  await running?.stop();
  logs.assertNoPrivateKey();
  await dir?.remove();
});

describe('webhook server in meshpilot discovery', () => {
  it("listens on --httpsAddr with the secure server's certificate: istiod names plus ISTIOD_CUSTOM_HOST (DNS and IP)", async () => {
    const r = await ready(running.ca!.trustBundlePem());
    assert.equal(r.status, 200);
    for (const san of ['DNS:istiod.istio-system.svc', 'DNS:istio-pilot.istio-system.svc', 'DNS:localhost', 'IP Address:127.0.0.1'])
      assert.ok(r.sans.includes(san), `${san} in ${r.sans}`);
    assert.equal((await ready(running.ca!.trustBundlePem(), 'localhost')).status, 200);
  });

  it('a root rotation (new key) reaches new connections without a restart', async () => {
    const oldRoot = firstPem(running.ca!.trustBundlePem());
    await running.ca!.rotateRoot({ newKey: true, overlapMs: 0 });
    const newRoot = firstPem(running.ca!.trustBundlePem());
    assert.notEqual(newRoot, oldRoot);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const r = await ready(newRoot).catch((err: unknown) => err as Error);
      if (!(r instanceof Error)) {
        assert.equal(r.status, 200);
        break;
      }
      assert.ok(Date.now() < deadline, `the webhook server still presents the old chain: ${r.message}`);
      await new Promise((res) => setTimeout(res, 100));
    }
    await assert.rejects(
      ready(oldRoot),
      /unable to verify|self[- ]signed|certificate/i,
      'the old root alone no longer verifies the new chain',
    );
    assert.ok(logs.lines.some((l) => l.includes('webhook serving certificate replaced')));
  });
});

describe('webhook options', () => {
  const base = ['--configDir', '/tmp/x'];
  it("defaults as istiod on loopback: 127.0.0.1:15017, revision default, the chart's configuration names", () => {
    const { injectionEnv, gatewayDeploy, ...defaults } = parseDiscoveryOptions(base, { HOME: '/root' }).webhooks;
    assert.deepEqual(defaults, {
      httpsAddr: '127.0.0.1:15017',
      revision: 'default',
      injectionWebhookConfigName: 'istio-sidecar-injector',
      validationWebhookConfigName: 'istio-validator-istio-system',
      nativeSidecars: 'auto',
      compliancePolicy: '',
    });
    assert.deepEqual(injectionEnv, { HOME: '/root' }, "the templates' env function sees the start-up environment");
    assert.equal(gatewayDeploy?.controllerName, 'istio.io/gateway-controller', 'the Gateway deployment controller runs by default');
    assert.equal(
      parseDiscoveryOptions(base, { PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER: 'false' }).webhooks.gatewayDeploy,
      undefined,
    );
    assert.equal(parseDiscoveryOptions(base, { PILOT_ENABLE_GATEWAY_API: '0' }).webhooks.gatewayDeploy, undefined);
    assert.throws(
      () => parseDiscoveryOptions(base, { PILOT_ENABLE_GATEWAY_API: 'sometimes' }),
      /PILOT_ENABLE_GATEWAY_API: "sometimes" is not a boolean/,
    );
    const env = {
      REVISION: 'canary',
      POD_NAMESPACE: 'mesh',
      INJECTION_WEBHOOK_CONFIG_NAME: '',
      ENABLE_NATIVE_SIDECARS: 'false',
      COMPLIANCE_POLICY: 'fips-140-3',
    };
    const { injectionEnv: _e, gatewayDeploy: gw, ...rev } = parseDiscoveryOptions([...base, '--httpsAddr', ':15017'], env).webhooks;
    assert.equal(gw?.revision, 'canary');
    assert.deepEqual(rev, {
      httpsAddr: ':15017',
      revision: 'canary',
      injectionWebhookConfigName: '',
      validationWebhookConfigName: 'istio-validator-canary-mesh',
      nativeSidecars: 'false',
      compliancePolicy: 'fips-140-3',
    });
    assert.throws(
      () => parseDiscoveryOptions(base, { ENABLE_NATIVE_SIDECARS: 'maybe' }),
      /ENABLE_NATIVE_SIDECARS: "maybe" is not true, false or auto/,
    );
  });

  it("'' turns the server off; a bad address is refused naming the flag", async () => {
    assert.equal(parseDiscoveryOptions([...base, '--httpsAddr', ''], {}).webhooks.httpsAddr, '');
    assert.throws(() => parseDiscoveryOptions([...base, '--httpsAddr', 'localhost'], {}), /--httpsAddr: "localhost" is not host:port/);
    const d = await tempDir();
    const off = await startDiscovery(
      parseDiscoveryOptions(
        [
          '--configDir',
          d.path,
          '--grpcAddr',
          '127.0.0.1:0',
          '--httpAddr',
          '127.0.0.1:0',
          '--monitoringAddr',
          '127.0.0.1:0',
          '--secureGRPCAddr',
          '127.0.0.1:0',
          '--httpsAddr',
          '',
          '--shutdownDuration',
          '1s',
        ],
        { ROOT_CA_DIR: path.join(d.path, 'none') },
      ),
      logs.logger,
    );
    try {
      assert.equal(off.webhookAddress, undefined);
    } finally {
      await off.stop();
      await d.remove();
    }
  });
});
