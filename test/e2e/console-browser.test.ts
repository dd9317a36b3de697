/**
 * The web console in a real headless Chromium (DevTools protocol over --remote-debugging-pipe,
 * test/support/cdp.ts): the page served by a running meshpilot with connected test proxies shows
 * every proxy, follows a config change until its bar reads N/N, shows the rejected object and the
 * analyzer's finding, previews a change, and logs no console error, exception or failed load on the
 * way. Skipped, with the reason, where Chromium is not installed (Debian: apt-get install chromium).
 */
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Browser, chromiumMissing, type Page } from '../support/cdp.js';
import { startConsoleScenario, type ConsoleScenario } from '../support/console-scenario.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';

const skip = chromiumMissing();
const remoteIp = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

/** The connected proxies' ids (what the table must list). */
const PROXIES = 7;

describe('web console in headless Chromium', { skip: skip ?? false, timeout: 180_000 }, () => {
  let scenario: ConsoleScenario;
  let browser: Browser;
  let page: Page;
  let shots: TempDir;

  before(async () => {
    scenario = await startConsoleScenario({ start: { listenHost: '0.0.0.0' } });
    browser = Browser.launch();
    page = await browser.newPage();
    shots = tempDir('meshpilot-console-shots-');
  });

  after(async () => {
    await browser?.close();
    await scenario?.close();
    await shots?.remove();
  });

  it('lists every connected proxy, with its counts, as SYNCED', async () => {
    await page.goto(scenario.url);
    await page.waitFor(`document.getElementById('stream-state').dataset.state === 'live'`, { description: 'the event stream open' });
    const ids = await page.waitFor<string[]>(
      `(() => { const ids = [...document.querySelectorAll('#proxy-rows .proxy-row')].map((r) => r.dataset.proxyId);
        const synced = [...document.querySelectorAll('#proxy-rows .proxy-row')].every((r) => r.dataset.state === 'SYNCED');
        return ids.length === ${PROXIES} && synced ? ids : undefined; })()`,
      { description: `${PROXIES} SYNCED proxy rows` },
    );
    assert.deepEqual(ids.sort(), scenario.streams.map((s) => s.node.id).sort());
    const total = await page.evaluate<string>(`document.querySelector('#proxy-counts .total b').textContent`);
    assert.equal(total, String(PROXIES));
    const kinds = await page.evaluate<string[]>(`[...document.querySelectorAll('#f-kind option')].map((o) => o.value)`);
    assert.deepEqual(kinds, ['', 'gateway', 'proxyless', 'sidecar']);
    // Filtering by namespace narrows the rendered rows.
    await page.evaluate(
      `(() => { const s = document.getElementById('f-namespace'); s.value = 'shop'; s.dispatchEvent(new Event('change')); })()`,
    );
    assert.equal(await page.evaluate<number>(`document.querySelectorAll('#proxy-rows .proxy-row').length`), 4);
    await page.evaluate(
      `(() => { const s = document.getElementById('f-namespace'); s.value = ''; s.dispatchEvent(new Event('change')); })()`,
    );
  });

  it('shows the rejected object with file:line and the analyzer message of meshctl analyze', async () => {
    const rejected = await page.waitFor<string>(`document.querySelector('#rejected li.level-Error')?.textContent`, {
      description: 'a rejected object',
    });
    assert.match(rejected, /broken\.yaml:\d+/);
    assert.match(rejected, /weight/);
    const analysis = await page.waitFor<string>(
      `[...document.querySelectorAll('#analysis li')].map((l) => l.textContent).find((t) => t.includes('IST0101'))`,
      { description: 'the IST0101 analyzer message' },
    );
    assert.match(analysis, /echo\.defualt\.svc\.cluster\.local/);
    assert.match(analysis, /mesh\.yaml:\d+/);
  });

  it('follows a config change until every proxy ACKed: the bar reaches N/N', async () => {
    await page.screenshot(join(shots.path, 'before.png'));
    const seqBefore = Number(await page.evaluate<string>(`document.body.dataset.seq`));
    await scenario.changeRoute('7s', 250);
    const done = await page.waitFor<{ acked: string; proxies: string; label: string; source: string; bytes?: string }>(
      `(() => { const c = [...document.querySelectorAll('#change-list .change')]
          .find((e) => e.dataset.configs.includes('VirtualService/default/echo-routes') && e.dataset.state === 'converged');
        return c && { acked: c.dataset.acked, proxies: c.dataset.proxies, label: c.querySelector('.bar-label').textContent,
          source: c.querySelector('.configs li').textContent, bytes: c.dataset.bytes }; })()`,
      { description: 'the VirtualService change converged in the change list', timeoutMs: 30_000 },
    );
    assert.ok(Number(done.proxies) >= 1, JSON.stringify(done));
    assert.equal(done.acked, done.proxies);
    assert.equal(done.label, `${done.proxies}/${done.proxies}`);
    assert.match(done.source, /mesh\.yaml:\d+/);
    // The DestinationRule changed every Envoy's clusters: the push's bytes were tallied while the console was open.
    assert.ok(Number(done.bytes) > 0, JSON.stringify(done));
    assert.ok(Number(await page.evaluate<string>(`document.body.dataset.seq`)) > seqBefore);
    const histogram = await page.evaluate<string>(`document.querySelector('#histogram .muted').textContent`);
    assert.match(histogram, /convergence, last hour: [1-9]\d* changes/);
    await page.screenshot(join(shots.path, 'after.png'));
  });

  it('previews a pasted change through /debug/preview', async () => {
    await page.evaluate(`(() => {
      document.getElementById('preview-yaml').value = ${JSON.stringify(
        `apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: echo, namespace: default}\nspec:\n  host: echo.default.svc.cluster.local\n  trafficPolicy: {connectionPool: {tcp: {maxConnections: 7}}}\n  subsets: [{name: v1, labels: {version: v1}}]\n`,
      )};
      document.getElementById('preview-run').click(); })()`);
    const text = await page.waitFor<string>(
      `(() => { const t = document.getElementById('preview-result').textContent; return t.includes('would change') ? t : undefined; })()`,
      { description: 'the preview answer' },
    );
    assert.match(text, /DestinationRule\/default\/echo: [1-9]\d* proxies would change/);
  });

  it('logged no console error, exception or failed load', () => {
    assert.deepEqual(page.problems(), []);
    assert.ok(page.messages.every((m) => m.source !== 'exception'));
  });

  it(
    'answers a remote caller without credentials 401, as the debug endpoints do',
    { skip: remoteIp ? false : 'no non-loopback IPv4 address' },
    async () => {
      const port = scenario.mp.httpAddr.slice(scenario.mp.httpAddr.lastIndexOf(':') + 1);
      for (const p of ['/console', '/console/console.js', '/console/events', '/debug/syncz']) {
        const res = await fetch(`http://${remoteIp}:${port}${p}`);
        assert.equal(res.status, 401, p);
        assert.equal((await res.text()).trim(), 'Unauthorized');
      }
    },
  );
});
