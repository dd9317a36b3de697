import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ipv6Enabled, lookupUid, podAddresses, resolvConfServers } from './probe.js';

describe('pod environment probes', () => {
  const v4 = { address: '10.1.2.3', family: 4 as const };
  const v6 = { address: 'fd00::3', family: 6 as const };
  const lo = [
    { address: '127.0.0.1', family: 4 as const },
    { address: '::1', family: 6 as const },
  ];
  const linkLocal = { address: 'fe80::1', family: 6 as const };

  it('IPv6 is on for an IPv6-only pod, or with dual stack for any pod with IPv6 (Istio’s getLocalIP)', () => {
    assert.equal(ipv6Enabled([...lo, v4], false), false);
    assert.equal(ipv6Enabled([...lo, v6], false), true);
    assert.equal(ipv6Enabled([...lo, v4, v6], false), false, 'IPv4 is listed first');
    assert.equal(ipv6Enabled([...lo, v4, v6], true), true);
    assert.equal(ipv6Enabled([...lo, v4, linkLocal], true), false, 'link-local does not count');
    assert.equal(ipv6Enabled(lo, true), false);
  });

  it('reads addresses of another namespace through ip -j addr', async () => {
    const json = JSON.stringify([
      { ifname: 'lo', addr_info: [{ family: 'inet', local: '127.0.0.1' }] },
      {
        ifname: 'eth0',
        addr_info: [
          { family: 'inet6', local: 'fd00::9' },
          { family: 'inet', local: '10.0.0.9' },
        ],
      },
    ]);
    const seen: string[][] = [];
    const addrs = await podAddresses((cmd, args) => {
      seen.push([cmd, ...args]);
      return Promise.resolve({ code: 0, stdout: json, stderr: '' });
    });
    assert.deepEqual(seen, [['ip', '-j', 'addr', 'show']]);
    assert.deepEqual(
      addrs.map((a) => `${a.family}:${a.address}`),
      ['4:127.0.0.1', '6:fd00::9', '4:10.0.0.9'],
    );
  });

  it('takes resolv.conf name servers, skipping what does not parse', () => {
    const text =
      'search default.svc.cluster.local\nnameserver 10.96.0.10\n  nameserver fd00::a\nnameserver fe80::1%eth0\n# nameserver 1.1.1.1\noptions ndots:5\n';
    assert.deepEqual(resolvConfServers(text), ['10.96.0.10', 'fd00::a']);
  });

  it('looks the proxy user up in a passwd file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mp-passwd-'));
    try {
      const file = join(dir, 'passwd');
      writeFileSync(file, 'root:x:0:0:root:/root:/bin/sh\nistio-proxy:x:1337:1337::/home/istio-proxy:/bin/sh\n');
      assert.equal(await lookupUid('istio-proxy', file), '1337');
      assert.equal(await lookupUid('nobody-here', file), undefined);
      assert.equal(await lookupUid('istio-proxy', join(dir, 'missing')), undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
