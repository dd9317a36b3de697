import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  buildQuery,
  buildReply,
  DnsFormatError,
  fitReply,
  parseQuery,
  RCODE_NOERROR,
  readAnswers,
  readName,
  splitName,
  TYPE_A,
  TYPE_AAAA,
  TYPE_CNAME,
} from './wire.js';

/** A seeded generator, so a failing fuzz case can be run again. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('DNS wire format', () => {
  it('reads a query as dig sends it: id, RD, the question, the EDNS UDP size', () => {
    const q = parseQuery(buildQuery(0xbeef, 'Reviews.Default.svc.cluster.local', TYPE_AAAA, { ednsUdpSize: 1232 }));
    assert.equal(q.header.id, 0xbeef);
    assert.equal(q.header.recursionDesired, true);
    assert.deepEqual(q.question, { name: 'Reviews.Default.svc.cluster.local', type: TYPE_AAAA, class: 1 });
    assert.equal(q.ednsUdpSize, 1232);
    assert.equal(parseQuery(buildQuery(1, 'a.b', TYPE_A)).ednsUdpSize, undefined);
  });

  it('writes replies that read back: A, AAAA (compressed and IPv4-mapped forms), CNAME chains', () => {
    const query = parseQuery(buildQuery(7, 'x.example.com', TYPE_A));
    const reply = buildReply(query, {
      rcode: RCODE_NOERROR,
      authoritative: true,
      answers: [
        { name: 'x.example.com.default.svc.cluster.local', type: TYPE_CNAME, ttl: 30, target: 'x.example.com.' },
        { name: 'x.example.com', type: TYPE_A, ttl: 30, address: '240.240.0.1' },
        { name: 'x.example.com', type: TYPE_AAAA, ttl: 30, address: '2001:2::f0f0:1' },
        { name: 'x.example.com', type: TYPE_AAAA, ttl: 30, address: '::ffff:10.0.0.1' },
      ],
    });
    const { header, answers } = readAnswers(reply);
    assert.equal(header.id, 7);
    assert.equal(header.response, true);
    assert.equal(header.authoritative, true);
    assert.equal(header.recursionDesired, true);
    assert.deepEqual(answers, [
      { name: 'x.example.com.default.svc.cluster.local', type: TYPE_CNAME, ttl: 30, target: 'x.example.com' },
      { name: 'x.example.com', type: TYPE_A, ttl: 30, address: '240.240.0.1' },
      { name: 'x.example.com', type: TYPE_AAAA, ttl: 30, address: '2001:2::f0f0:1' },
      { name: 'x.example.com', type: TYPE_AAAA, ttl: 30, address: '::ffff:a00:1' },
    ]);
  });

  it('drops answers past the size limit and sets TC', () => {
    const query = parseQuery(buildQuery(9, 'many.example.com', TYPE_A));
    const answers = Array.from(
      { length: 100 },
      (_, i) => ({ name: 'many.example.com', type: TYPE_A, ttl: 30, address: `10.0.${i}.1` }) as const,
    );
    const reply = buildReply(query, { rcode: RCODE_NOERROR, answers, maxSize: 512 });
    assert.ok(reply.length <= 512);
    const read = readAnswers(reply);
    assert.equal(read.header.truncated, true);
    assert.ok(read.answers.length > 0 && read.answers.length < 100);
    // An upstream reply too big for the client keeps its question only, with TC.
    const big = buildReply(query, { rcode: RCODE_NOERROR, answers });
    const fitted = fitReply(big, 512);
    assert.equal(readAnswers(fitted).header.truncated, true);
    assert.equal(readAnswers(fitted).answers.length, 0);
    assert.equal(
      parseQuery(Buffer.concat([fitted.subarray(0, 2), Buffer.from([1, 0]), fitted.subarray(4)])).question.name,
      'many.example.com',
    );
  });

  it('follows compression pointers backwards only; a loop or forward pointer is a format error', () => {
    // "a" at 12, then a name at 15 that is "b" + pointer to 12.
    const msg = Buffer.from([...new Array(12).fill(0), 1, 0x61, 0, 1, 0x62, 0xc0, 12]);
    assert.deepEqual(readName(msg, 15), { name: 'b.a', next: 19 });
    const loop = Buffer.from([...new Array(12).fill(0), 0xc0, 12]);
    assert.throws(() => readName(loop, 12), DnsFormatError);
    const forward = Buffer.from([...new Array(12).fill(0), 0xc0, 14, 0]);
    assert.throws(() => readName(forward, 12), DnsFormatError);
  });

  it('escapes dots and odd bytes in labels, and splits them back', () => {
    const msg = Buffer.from([...new Array(12).fill(0), 3, 0x61, 0x2e, 0x00, 0]);
    const { name } = readName(msg, 12);
    assert.equal(name, 'a\\.\\000');
    assert.deepEqual(splitName(name), [Uint8Array.from([0x61, 0x2e, 0x00])]);
  });

  it('rejects what is not one question: too short, no question, two, cut off, names over 255 bytes', () => {
    const good = buildQuery(1, 'a.example.com', TYPE_A);
    const cases: [string, Buffer][] = [
      ['short header', good.subarray(0, 11)],
      ['no question', Buffer.concat([good.subarray(0, 4), Buffer.from([0, 0]), good.subarray(6, 12)])],
      ['two questions', Buffer.concat([good.subarray(0, 4), Buffer.from([0, 2]), good.subarray(6)])],
      ['question cut off', good.subarray(0, good.length - 2)],
      ['record past the end', Buffer.concat([good.subarray(0, 10), Buffer.from([0, 1]), good.subarray(12)])],
      [
        'long name',
        Buffer.concat([
          good.subarray(0, 12),
          Buffer.from(Array.from({ length: 5 }, () => [63, ...new Array(63).fill(0x61)]).flat()),
          Buffer.from([0, 0, 1, 0, 1]),
        ]),
      ],
    ];
    for (const [what, packet] of cases) assert.throws(() => parseQuery(packet), DnsFormatError, what);
  });

  it('fuzz: random bytes and mutated queries either parse or throw DnsFormatError, never anything else', () => {
    const next = rng(0x5eed);
    const seeds = [
      buildQuery(1, 'reviews.default.svc.cluster.local', TYPE_A, { ednsUdpSize: 4096 }),
      buildReply(parseQuery(buildQuery(2, 'x.example.com', TYPE_A)), {
        rcode: 0,
        answers: [{ name: 'x.example.com', type: TYPE_CNAME, ttl: 30, target: 'y.example.com' }],
      }),
    ];
    for (let i = 0; i < 20_000; i++) {
      let packet: Buffer;
      if (i % 4 === 0) packet = randomBytes(Math.floor(next() * 64));
      else {
        packet = Buffer.from(seeds[i % seeds.length]!);
        const flips = 1 + Math.floor(next() * 4);
        for (let f = 0; f < flips; f++) packet[Math.floor(next() * packet.length)] = Math.floor(next() * 256);
        if (next() < 0.2) packet = packet.subarray(0, Math.floor(next() * packet.length));
      }
      for (const read of [() => parseQuery(packet), () => readAnswers(packet), () => fitReply(packet, 16)]) {
        try {
          read();
        } catch (err) {
          if (!(err instanceof DnsFormatError)) assert.fail(`packet ${packet.toString('hex')} threw ${String(err)}`);
        }
      }
    }
  });
});
