import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Command } from 'commander';
import { UsageError } from '../io.js';
import { addConnectionFlags, connectionOptions, type ConnectionFlags } from './connection-flags.js';

function parse(args: string[]): ConnectionFlags {
  const cmd = addConnectionFlags(new Command('x').exitOverride());
  cmd.parse(args, { from: 'user' });
  return cmd.opts<ConnectionFlags>();
}

describe('proxy command connection flags', () => {
  it('plaintext 127.0.0.1:15010 by default; several replicas by repeating or comma-separating --xds-address', () => {
    assert.deepEqual(connectionOptions(parse([])), { addresses: ['127.0.0.1:15010'], conn: { timeoutMs: 10_000 } });
    assert.deepEqual(connectionOptions(parse(['--xds-address', 'a:1,b:2', '--xds-address', 'c:3', '--timeout', '500ms'])).addresses, [
      'a:1',
      'b:2',
      'c:3',
    ]);
  });

  it('--cert-dir switches to TLS on 15012 with the root (and client cert when present); --token needs it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'meshctl-certs-'));
    try {
      assert.throws(
        () => connectionOptions(parse(['--cert-dir', dir])),
        (e: unknown) => e instanceof UsageError && /no root-cert\.pem/.test(e.message),
      );
      writeFileSync(join(dir, 'root-cert.pem'), 'ROOT');
      const a = connectionOptions(parse(['--cert-dir', dir, '--token', 'jwt']));
      assert.deepEqual(a, {
        addresses: ['127.0.0.1:15012'],
        conn: { timeoutMs: 10_000, token: 'jwt', tls: { rootCertPem: 'ROOT', serverName: 'istiod.istio-system.svc' } },
      });
      writeFileSync(join(dir, 'cert-chain.pem'), 'CHAIN');
      writeFileSync(join(dir, 'key.pem'), 'KEY');
      assert.deepEqual(connectionOptions(parse(['--cert-dir', dir])).conn.tls, {
        rootCertPem: 'ROOT',
        serverName: 'istiod.istio-system.svc',
        clientCertChainPem: 'CHAIN',
        clientKeyPem: 'KEY',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    assert.throws(() => connectionOptions(parse(['--token', 't'])), UsageError);
    assert.throws(() => connectionOptions(parse(['--timeout', 'soon'])), /invalid --timeout "soon"/);
  });

  it('--timeout takes durations as istioctl (30s, 2m, 1m30s, 500ms); a bare number is an error naming the flag', () => {
    const ms = (t: string): number | undefined => connectionOptions(parse(['--timeout', t])).conn.timeoutMs;
    assert.equal(ms('30s'), 30_000);
    assert.equal(ms('2m'), 120_000);
    assert.equal(ms('1m30s'), 90_000);
    assert.equal(ms('500ms'), 500);
    for (const bad of ['5000', '0s', '', '10 s']) {
      assert.throws(
        () => connectionOptions(parse(['--timeout', bad])),
        (e: unknown) => e instanceof UsageError && e.message.startsWith(`invalid --timeout "${bad}": give a duration`),
        bad,
      );
    }
  });
});
