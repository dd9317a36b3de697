import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../util/log.js';
import { startTestDnsServer, type TestDnsServer } from '../../test/support/dns-server.js';
import { waitFor } from '../../test/support/wait.js';
import { GatewayNames } from './gateway-names.js';

let dns: TestDnsServer;
before(async () => {
  dns = await startTestDnsServer();
});
after(() => dns.close());

function names(onChange: () => void = () => {}): GatewayNames {
  return new GatewayNames({
    logger: createLogger({ sink: () => {}, level: 'error' }),
    onChange,
    servers: [dns.address],
    timeoutMs: 500,
    minTtlMs: 50,
  });
}

describe('network gateway host names', () => {
  it('resolves A and AAAA records, sorted, and reports the change', async () => {
    dns.zone.set('gw.example.test', ['192.0.2.20', '2001:db8::20', '192.0.2.10']);
    let changes = 0;
    const g = names(() => changes++);
    try {
      g.watch(new Set(['gw.example.test']));
      await waitFor(() => changes > 0, { description: 'the first resolution' });
      assert.deepEqual([...g.current()], [['gw.example.test', ['192.0.2.10', '192.0.2.20', '2001:db8::20']]]);
    } finally {
      g.stop();
    }
  });

  it('re-resolves when the TTL runs out; a failing server keeps the last addresses; a dropped name is forgotten', async () => {
    dns.zone.set('lb.example.test', ['192.0.2.30']);
    let changes = 0;
    const g = names(() => changes++);
    try {
      g.watch(new Set(['lb.example.test']));
      await waitFor(() => changes === 1, { description: 'the first resolution' });
      dns.zone.set('lb.example.test', ['192.0.2.31']);
      await waitFor(() => g.current().get('lb.example.test')?.[0] === '192.0.2.31', { description: 'the refreshed address' });
      dns.failing.add('lb.example.test');
      const seen = dns.asked.length;
      await waitFor(() => dns.asked.length >= seen + 4, { description: 'two refreshes against the failing server' });
      assert.deepEqual(g.current().get('lb.example.test'), ['192.0.2.31']);
      g.watch(new Set());
      assert.equal(g.current().size, 0);
    } finally {
      dns.failing.delete('lb.example.test');
      g.stop();
    }
  });

  it('a name without records resolves to nothing (no gateway), and is asked again later', async () => {
    const g = names();
    try {
      const seen = dns.asked.filter((a) => a.startsWith('none.example.test/')).length;
      g.watch(new Set(['none.example.test']));
      await waitFor(() => dns.asked.filter((a) => a.startsWith('none.example.test/')).length >= seen + 4, {
        description: 'two resolutions',
      });
      assert.equal(g.current().has('none.example.test'), false);
    } finally {
      g.stop();
    }
  });
});
