/**
 * `meshpilot demo` end to end, with the real Envoy: on a copy of examples/bookinfo (the apps on
 * free ports instead of 19080–19085), the plain output shows the reviews split of traffic.yaml
 * (80 % v1, 20 % v3); an edit sending everything to v2 shows within seconds; SIGINT stops it with
 * exit 0, and every process it started (meshpilot discovery, the agent, Envoy) is gone, as is
 * its temp directory (the CA state never lands in the config directory).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { terminate } from '../support/cleanup.js';
import { answeredSeconds, parseDemoLine, startDemo } from '../support/demo-process.js';
import { envoySkipReason } from '../support/envoy.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const skip = envoySkipReason();

/** Every process under `pid` (children, their children …), from /proc. */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(Number(e), ppid);
    } catch {
      /* gone */
    }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const [child, pp] of parent)
      if (pp === p) {
        out.push(child);
        walk(child);
      }
  };
  walk(pid);
  return out;
}

const alive = (pid: number): boolean => existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));

describe('meshpilot demo', { skip }, () => {
  const dir = tempDir();
  after(() => dir.remove());

  it('shows the split, follows an edit of traffic.yaml, and stops everything on SIGINT', async (t) => {
    const demo = await startDemo(dir.path, '120s');
    const { child, lines, errLines, why } = demo;
    const config = demo.configDir;
    try {
      // Three full seconds after the first answers: about 80/20 between v1 and v3, nothing to v2.
      await waitFor(
        () => {
          if (child.exitCode !== null) throw new Error(`demo exited ${child.exitCode}\n${why()}`);
          return answeredSeconds(demo) >= 4;
        },
        { description: 'four seconds of answers', timeoutMs: 90_000 },
      );
      assert.ok(
        errLines.some((l) => /data plane: Envoy 1\.\d+\.\d+ sidecar/.test(l)),
        why(),
      );
      const before = lines
        .map(parseDemoLine)
        .filter((p) => p !== undefined)
        .slice(-3);
      const sum = (v: string): number => before.reduce((a, p) => a + (p.counts.get(v) ?? 0), 0);
      const total = sum('v1') + sum('v2') + sum('v3');
      assert.ok(total >= 60, `enough answers: ${total}\n${why()}`);
      assert.equal(sum('v2'), 0, why());
      const v1 = sum('v1') / total;
      assert.ok(v1 > 0.65 && v1 < 0.93 && sum('v3') > 0, `80/20: v1 ${sum('v1')}, v3 ${sum('v3')}\n${why()}`);
      assert.deepEqual(
        before.map((p) => p.errors),
        [0, 0, 0],
        why(),
      );
      const beforeText = lines.slice(-3).join('\n');

      // Everything to v2.
      const traffic = join(config, 'traffic.yaml');
      const text = readFileSync(traffic, 'utf8');
      const split =
        /( {6}route:\n {8}- destination: \{host: reviews, subset: v1\}\n {10}weight: 80\n {8}- destination: \{host: reviews, subset: v3\}\n {10}weight: 20\n)/;
      assert.match(text, split);
      writeFileSync(traffic, text.replace(split, '      route:\n        - destination: {host: reviews, subset: v2}\n'));
      const editedAt = lines.length;
      await waitFor(
        () => {
          const p = lines
            .slice(editedAt)
            .map(parseDemoLine)
            .filter((x) => x !== undefined);
          return p.some((x) => (x.counts.get('v2') ?? 0) > 10 && (x.counts.get('v1') ?? 0) === 0 && (x.counts.get('v3') ?? 0) === 0);
        },
        { description: 'a second with only v2', timeoutMs: 5_000 },
      );
      // The first whole second after the edit is already all v2 or the one after it: at most two lines.
      const afterEdit = lines.slice(editedAt);
      const firstAllV2 = afterEdit.findIndex((l) => /reviews v1=0 reviews v2=\d+ reviews v3=0/.test(l));
      assert.ok(firstAllV2 >= 0 && firstAllV2 <= 2, `all v2 within two seconds:\n${afterEdit.join('\n')}`);
      for (const l of ['before the edit:', ...beforeText.split('\n'), 'after:', ...afterEdit]) t.diagnostic(l);

      const started = descendants(child.pid!);
      assert.ok(started.length >= 3, `meshpilot, the agent and Envoy run under the demo: ${started.join(', ')}`);
      const caLine = errLines.find((l) => l.includes('CA state in'));
      const caDir = /CA state in (\S+)\)/.exec(caLine ?? '')?.[1];
      assert.ok(caDir !== undefined && !caDir.startsWith(config), `CA state outside the config dir: ${caLine}`);
      assert.ok(!existsSync(join(config, '.meshpilot')), 'nothing written in the config directory');

      child.kill('SIGINT');
      const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      assert.equal(code, 0, why());
      await waitFor(() => started.every((p) => !alive(p)), { description: 'every process the demo started to be gone', timeoutMs: 5_000 });
      assert.ok(!existsSync(join(caDir, '..')), `the demo's temp dir is removed: ${caDir}`);
    } finally {
      await terminate(child, 3000);
    }
  });
});

describe('meshpilot demo --proxyless (what runs without Envoy)', () => {
  const dir = tempDir();
  after(() => dir.remove());

  it('a grpc-js-xds client shows the same split and says so', async () => {
    const demo = await startDemo(dir.path, '4s', ['--proxyless']);
    try {
      const code = await new Promise<number | null>((resolve) => demo.child.once('exit', (c) => resolve(c)));
      assert.equal(code, 0, demo.why());
      assert.ok(
        demo.errLines.some((l) => l.includes('data plane: proxyless gRPC (grpc-js-xds')),
        demo.why(),
      );
      const seconds = demo.lines.map(parseDemoLine).filter((p) => p !== undefined);
      const last = seconds.slice(-2);
      const v1 = last.reduce((a, p) => a + (p.counts.get('v1') ?? 0), 0);
      const v3 = last.reduce((a, p) => a + (p.counts.get('v3') ?? 0), 0);
      assert.ok(v1 + v3 >= 40 && v1 / (v1 + v3) > 0.6 && v1 / (v1 + v3) < 0.95 && !last.some((p) => p.counts.has('v2')), demo.why());
    } finally {
      await terminate(demo.child, 3000);
    }
  });
});
