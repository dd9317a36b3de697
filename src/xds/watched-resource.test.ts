import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TypeUrl } from './type-urls.js';
import { decideSotw, type RequestDecision, type SotwRequestView, type WatchedResource } from './watched-resource.js';

const LDS = TypeUrl.Listener;
const RDS = TypeUrl.RouteConfiguration;

function req(over: Partial<SotwRequestView>): SotwRequestView {
  return { typeUrl: LDS, resourceNames: [], responseNonce: '', versionInfo: '', ...over };
}

function sent(w: WatchedResource, nonce: string): WatchedResource {
  return { ...w, nonceSent: nonce, versionSent: 'v1' };
}

describe('decideSotw (istiod shouldRespond)', () => {
  it('answers the first request and records its names; empty LDS is wildcard, empty RDS is not', () => {
    const d = decideSotw(undefined, req({ resourceNames: ['a:80'] }), 0);
    assert.equal(d.kind, 'initial');
    assert.equal(d.respond, true);
    assert.deepEqual([...d.next!.names], ['a:80']);
    assert.equal(d.next!.wildcard, false);
    assert.equal(decideSotw(undefined, req({}), 0).next!.wildcard, true);
    assert.equal(decideSotw(undefined, req({ typeUrl: RDS }), 0).next!.wildcard, false);
  });

  it('answers a reconnect that carries an old version and nonce (looks like an ACK)', () => {
    const d = decideSotw(undefined, req({ resourceNames: ['a:80'], responseNonce: 'from-other-replica', versionInfo: 'old' }), 0);
    assert.equal(d.kind, 'reconnect');
    assert.equal(d.respond, true);
    assert.equal(d.next!.alwaysRespond, true, 'a reconnect sets alwaysRespond');
    assert.equal(decideSotw(undefined, req({ resourceNames: ['a:80'] }), 0).next!.alwaysRespond, undefined, 'a fresh start does not');
  });

  it('alwaysRespond: answered once while set, then (cleared by the sender) its ACK gets none', () => {
    const first = decideSotw(undefined, req({ resourceNames: ['a:80'], responseNonce: 'old', versionInfo: 'old' }), 0).next!;
    // The response could not be sent yet (still set): an ACK-looking request with the sent nonce is answered.
    const pending = sent(first, 'n1');
    assert.equal(decideSotw(pending, req({ resourceNames: ['a:80'], responseNonce: 'n1', versionInfo: 'v1' }), 1).respond, true);
    // The sender clears it with the response: the ACK of that response is not answered (no loop).
    const cleared: WatchedResource = { ...sent(first, 'n2'), alwaysRespond: false };
    const d = decideSotw(cleared, req({ resourceNames: ['a:80'], responseNonce: 'n2', versionInfo: 'v1' }), 2);
    assert.equal(d.kind, 'ack');
    assert.equal(d.respond, false);
    // The replayed old nonce is stale on this stream now.
    assert.equal(decideSotw(cleared, req({ resourceNames: ['a:80'], responseNonce: 'old', versionInfo: 'old' }), 3).kind, 'stale');
  });

  it('an ACK of the last nonce with the same names gets no response', () => {
    const w = sent(decideSotw(undefined, req({ resourceNames: ['a:80'] }), 0).next!, 'n1');
    const d = decideSotw(w, req({ resourceNames: ['a:80'], responseNonce: 'n1', versionInfo: 'v1' }), 1);
    assert.equal(d.kind, 'ack');
    assert.equal(d.respond, false);
    assert.equal(d.next!.nonceAcked, 'n1');
    assert.equal(d.next!.versionAcked, 'v1');
  });

  it('names compare as sets: the same names in another order are an ACK; a swapped name with a duplicate is not', () => {
    const w = sent(decideSotw(undefined, req({ resourceNames: ['a:80', 'b:80', 'c:80'] }), 0).next!, 'n1');
    const ack = (names: string[]): RequestDecision =>
      decideSotw(w, req({ resourceNames: names, responseNonce: 'n1', versionInfo: 'v1' }), 1);
    assert.equal(ack(['a:80', 'b:80', 'c:80']).kind, 'ack');
    assert.equal(ack(['c:80', 'a:80', 'b:80']).kind, 'ack');
    assert.equal(ack(['a:80', 'b:80', 'b:80']).kind, 'resubscribe', 'same length, c dropped');
    assert.equal(ack(['a:80', 'b:80', 'd:80']).kind, 'resubscribe');
  });

  it('a changed name list sent with the previous nonce is answered', () => {
    const w = sent(decideSotw(undefined, req({ resourceNames: ['a:80'] }), 0).next!, 'n1');
    const d = decideSotw(w, req({ resourceNames: ['a:80', 'b:80'], responseNonce: 'n1', versionInfo: 'v1' }), 1);
    assert.equal(d.kind, 'resubscribe');
    assert.equal(d.respond, true);
    assert.deepEqual([...d.next!.names].sort(), ['a:80', 'b:80']);
  });

  it('a NACK is recorded with its detail and never answered', () => {
    const w = sent(decideSotw(undefined, req({ resourceNames: ['a:80'] }), 0).next!, 'n1');
    const d = decideSotw(
      w,
      req({ resourceNames: ['a:80'], responseNonce: 'n1', versionInfo: '', errorDetail: { code: 3, message: 'bad listener' } }),
      5,
    );
    assert.equal(d.kind, 'nack');
    assert.equal(d.respond, false);
    assert.deepEqual(d.next!.lastError, { nonce: 'n1', message: 'bad listener', code: 3, at: 5 });
    assert.equal(d.next!.nonceAcked, undefined, 'a NACK does not count as an ACK');
  });

  it('a request with a nonce other than the last one sent is stale and ignored', () => {
    const w = sent(decideSotw(undefined, req({ resourceNames: ['a:80'] }), 0).next!, 'n2');
    const d = decideSotw(w, req({ resourceNames: ['a:80', 'c:80'], responseNonce: 'n1' }), 1);
    assert.equal(d.kind, 'stale');
    assert.equal(d.respond, false);
    assert.deepEqual([...d.next!.names], ['a:80'], 'stale requests change nothing');
  });

  it('an empty list later on a named watch unsubscribes; on a wildcard watch it is a plain ACK', () => {
    const named = sent(decideSotw(undefined, req({ resourceNames: ['a:80'] }), 0).next!, 'n1');
    const u = decideSotw(named, req({ responseNonce: 'n1' }), 1);
    assert.equal(u.kind, 'unsubscribe');
    assert.equal(u.respond, false);
    assert.equal(u.next!.names.size, 0);
    const wild = sent(decideSotw(undefined, req({}), 0).next!, 'n1');
    const a = decideSotw(wild, req({ responseNonce: 'n1' }), 1);
    assert.equal(a.kind, 'ack');
    assert.equal(a.next!.wildcard, true);
  });

  it('an empty nonce on an existing watch (client re-init) is answered', () => {
    const w = sent(decideSotw(undefined, req({ resourceNames: ['a:80'] }), 0).next!, 'n1');
    const d = decideSotw(w, req({ resourceNames: ['a:80'] }), 1);
    assert.equal(d.respond, true);
  });
});
