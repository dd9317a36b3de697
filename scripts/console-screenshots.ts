/**
 * Regenerates docs/console-before.png and docs/console-after.png: the web console of a meshpilot
 * with a few test proxies (test/support/console-scenario.ts), before and after a config change has
 * converged, captured by headless Chromium over the DevTools pipe (test/support/cdp.ts).
 *
 *   npx tsx scripts/console-screenshots.ts [outDir=docs]
 */
import { join } from 'node:path';
import { Browser, chromiumMissing } from '../test/support/cdp.js';
import { startConsoleScenario } from '../test/support/console-scenario.js';
import { REPO_ROOT } from '../test/support/paths.js';

const SIZE = { width: 1400, height: 1050 };

async function main(): Promise<void> {
  const missing = chromiumMissing();
  if (missing) throw new Error(missing);
  const outDir = process.argv[2] ?? join(REPO_ROOT, 'docs');
  const scenario = await startConsoleScenario();
  const browser = Browser.launch({ windowSize: SIZE });
  try {
    const page = await browser.newPage(SIZE);
    await page.goto(scenario.url);
    await page.waitFor(
      `document.querySelectorAll('#proxy-rows .proxy-row[data-state="SYNCED"]').length === ${scenario.streams.length}
        && [...document.querySelectorAll('#analysis li')].some((l) => l.textContent.includes('IST'))
        && document.querySelectorAll('#charts figure').length > 0`,
      { description: 'every proxy SYNCED and the analysis shown' },
    );
    // A few load samples, so the charts have a line.
    await new Promise((r) => setTimeout(r, 3000));
    await page.screenshot(join(outDir, 'console-before.png'));
    await scenario.changeRoute('7s', 250);
    await page.waitFor(
      `[...document.querySelectorAll('#change-list .change')].some((e) => e.dataset.configs.includes('VirtualService/default/echo-routes') && e.dataset.state === 'converged')`,
      { description: 'the change converged', timeoutMs: 30_000 },
    );
    await new Promise((r) => setTimeout(r, 1500));
    await page.screenshot(join(outDir, 'console-after.png'));
    const problems = page.problems();
    if (problems.length > 0) throw new Error(`the page logged problems: ${JSON.stringify(problems)}`);
    process.stdout.write(`wrote ${join(outDir, 'console-before.png')} and ${join(outDir, 'console-after.png')}\n`);
  } finally {
    await browser.close();
    await scenario.close();
  }
}

await main();
