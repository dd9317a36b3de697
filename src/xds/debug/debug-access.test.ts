import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isLoopbackAddress, isLoopbackPeer } from '../../security/authn/proxy-authorization.js';
import { inScope, scopeOf } from './debug-access.js';

describe('debug access decisions', () => {
  it('loopback: 127/8, ::1 and IPv4-mapped loopback, in the forms grpc-js and node:http report peers', () => {
    for (const a of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) assert.equal(isLoopbackAddress(a), true, a);
    for (const a of ['192.0.2.2', '::ffff:10.0.0.1', 'fd00::2', '0.0.0.0', '', 'localhost.evil', '1127.0.0.1'])
      assert.equal(isLoopbackAddress(a), false, a);
    for (const p of ['127.0.0.1:5555', '::1:5555', '[::1]:5555', 'ipv4:127.0.0.1:5555', '::ffff:127.0.0.1:5555'])
      assert.equal(isLoopbackPeer(p), true, p);
    for (const p of ['192.0.2.2:5555', 'fd00::2:5555', 'unknown', '']) assert.equal(isLoopbackPeer(p), false, p);
  });

  it('scope: the first SPIFFE identity decides; the system namespace sees all, others their own namespace', () => {
    const caller = (...identities: string[]) => ({ source: 'IDToken' as const, identities });
    assert.deepEqual(scopeOf(caller('spiffe://cluster.local/ns/istio-system/sa/istiod'), 'istio-system'), { all: true });
    assert.deepEqual(scopeOf(caller('not-spiffe', 'spiffe://cluster.local/ns/foo/sa/a'), 'istio-system'), { all: false, namespace: 'foo' });
    assert.equal(scopeOf(caller('not-spiffe'), 'istio-system'), undefined);
    assert.deepEqual(scopeOf(caller('spiffe://td/ns/mesh-root/sa/x'), 'mesh-root'), { all: true });
    assert.equal(inScope({ all: false, namespace: 'foo' }, { namespace: 'foo' }), true);
    assert.equal(inScope({ all: false, namespace: 'foo' }, { namespace: 'bar' }), false);
    assert.equal(inScope({ all: true }, { namespace: 'bar' }), true);
  });
});
