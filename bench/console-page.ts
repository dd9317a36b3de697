/**
 * The web console page with many proxies, in headless Chromium (test/support/cdp.ts): meshpilot
 * with N raw ADS sidecars (test/support/console-scenario.ts, every response ACKed), the page open,
 * then one config change that every sidecar gets. Reports how long until the page listed every
 * proxy and until the change's bar read N/N, how many events and bytes the page received, the
 * longest main-thread task in the page over the change (a long task is what makes a page feel
 * stuck), and how many row elements were in the DOM (the table renders only the visible rows).
 *
 *   npx tsx bench/console-page.ts [--proxies 2000]
 */
import { parseArgs } from 'node:util';
import { Browser, chromiumMissing } from '../test/support/cdp.js';
import { startConsoleScenario } from '../test/support/console-scenario.js';

const { values } = parseArgs({ options: { proxies: { type: 'string', default: '2000' } } });
const proxies = Number(values.proxies);

/** Installed in the page before it loads: counts events and bytes, records long tasks. */
const PROBE = `
  window.__probe = { events: 0, bytes: 0, longest: 0, longTasks: 0 };
  new PerformanceObserver((list) => { for (const e of list.getEntries()) {
    window.__probe.longTasks++; window.__probe.longest = Math.max(window.__probe.longest, e.duration); } })
    .observe({ type: 'longtask', buffered: true });
  const Real = window.EventSource;
  window.EventSource = class extends Real { constructor(...a) { super(...a);
    this.addEventListener('message', (m) => { window.__probe.events++; window.__probe.bytes += m.data.length; }); } };
`;

async function main(): Promise<void> {
  const missing = chromiumMissing();
  if (missing) throw new Error(missing);
  const t0 = performance.now();
  const scenario = await startConsoleScenario({ sidecars: proxies - 3 });
  const browser = Browser.launch();
  try {
    const page = await browser.newPage();
    await page.send('Page.addScriptToEvaluateOnNewDocument', { source: PROBE });
    const opened = performance.now();
    await page.goto(scenario.url);
    await page.waitFor(`document.querySelector('#proxy-counts .total b')?.textContent === '${proxies}'`, {
      description: `${proxies} proxies listed`,
      timeoutMs: 300_000,
    });
    const listedMs = performance.now() - opened;
    await page.waitFor(`Number(document.querySelector('#proxy-counts .state-SYNCED b')?.textContent) === ${proxies}`, {
      description: 'every proxy SYNCED',
      timeoutMs: 300_000,
    });
    await page.evaluate(
      `(() => { window.__probe.longest = 0; window.__probe.longTasks = 0; window.__probe.events = 0; window.__probe.bytes = 0; })()`,
    );
    const changed = performance.now();
    await scenario.changeRoute('9s', 300);
    const done = await page.waitFor<{ acked: string; proxies: string }>(
      `(() => { const c = [...document.querySelectorAll('#change-list .change')].find((e) => e.dataset.configs.includes('DestinationRule/default/echo') && e.dataset.state === 'converged');
        return c && { acked: c.dataset.acked, proxies: c.dataset.proxies }; })()`,
      { description: 'the change converged', timeoutMs: 300_000 },
    );
    const convergedMs = performance.now() - changed;
    const probe = await page.evaluate<{ events: number; bytes: number; longest: number; longTasks: number }>('window.__probe');
    const rows = await page.evaluate<number>(`document.querySelectorAll('#proxy-rows .proxy-row').length`);
    const problems = page.problems();
    const out = {
      proxies,
      setupS: Math.round((opened - t0) / 100) / 10,
      listedAllMs: Math.round(listedMs),
      change: { acked: Number(done.acked), proxies: Number(done.proxies), barFullAfterMs: Math.round(convergedMs) },
      duringChange: {
        events: probe.events,
        eventsPerSec: Math.round((probe.events / (convergedMs / 1000)) * 10) / 10,
        kib: Math.round(probe.bytes / 1024),
        longTasks: probe.longTasks,
        longestTaskMs: Math.round(probe.longest),
      },
      rowElementsInDom: rows,
      pageProblems: problems.length,
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    if (problems.length > 0) process.stdout.write(`page problems: ${JSON.stringify(problems.slice(0, 5))}\n`);
  } finally {
    await browser.close();
    await scenario.close();
  }
}

await main();
