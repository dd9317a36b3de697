/**
 * Wall and CPU time of one `meshctl analyze --use-kube=false -A DIR` with the built CLI, as CI
 * loops run it: N generated objects (a quarter each Service, VirtualService, DestinationRule, Pod)
 * in a temp dir, the CLI run K times, medians printed. It builds nothing: run `npm run build` first.
 *
 *   npx tsx bench/analyze-speed.ts [--objects 1000] [--runs 5] [--files 1]
 *
 * CPU is user+sys of the child, read from /usr/bin/time (Node has no per-child rusage).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '../test/support/paths.js';
import { stats } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '5' },
    files: { type: 'string', default: '1' },
  },
});
const objects = Number(values.objects);
const runs = Number(values.runs);
const files = Math.max(1, Number(values.files));

const cli = join(REPO_ROOT, 'dist/src/meshctl/main.js');
if (!existsSync(cli)) {
  console.error(`${cli} is missing: run \`npm run build\` first`);
  process.exit(2);
}

/** One group of four objects: a Service, the VirtualService and DestinationRule for it, a Pod behind it. */
function group(i: number): string {
  const ns = `ns${i % 10}`;
  return `apiVersion: v1
kind: Service
metadata: {name: svc${i}, namespace: ${ns}}
spec:
  selector: {app: app${i}}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: vs${i}, namespace: ${ns}}
spec:
  hosts: [svc${i}]
  http:
  - route:
    - destination: {host: svc${i}, subset: v1}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: dr${i}, namespace: ${ns}}
spec:
  host: svc${i}
  subsets: [{name: v1, labels: {version: v1}}]
---
apiVersion: v1
kind: Pod
metadata: {name: app${i}-0, namespace: ${ns}, labels: {app: app${i}, version: v1}}
spec:
  containers: [{name: app, image: app:1}]
`;
}

const dir = mkdtempSync(join(tmpdir(), 'analyze-speed-'));
try {
  const groups = Math.ceil(objects / 4);
  const perFile = Math.ceil(groups / files);
  for (let f = 0; f < files; f++) {
    const docs: string[] = [];
    for (let i = f * perFile; i < Math.min(groups, (f + 1) * perFile); i++) docs.push(group(i));
    if (docs.length > 0) writeFileSync(join(dir, `objects-${String(f).padStart(4, '0')}.yaml`), docs.join('---\n'));
  }
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < runs; r++) {
    const timing = join(dir, 'time.out');
    const start = process.hrtime.bigint();
    const res = spawnSync('/usr/bin/time', ['-o', timing, '-f', '%U %S', process.execPath, cli, 'analyze', '--use-kube=false', '-A', dir], {
      encoding: 'utf8',
    });
    wall.push(Number(process.hrtime.bigint() - start) / 1e6);
    // analyze exits 79 when it reports errors, 0 or with warnings otherwise; anything else is a failure.
    if (res.status !== 0 && res.status !== 79) {
      console.error(`analyze exited ${res.status}:\n${res.stderr}`);
      process.exit(1);
    }
    const [user, sys] = readFileSync(timing, 'utf8').trim().split(/\s+/).slice(-2).map(Number);
    cpu.push(((user ?? NaN) + (sys ?? NaN)) * 1000);
    if (r === 0) console.log(`analyze output: ${res.stdout.split('\n').length - 1} lines (exit ${res.status})`);
  }
  const w = stats(wall);
  const c = stats(cpu);
  console.log(`${groups * 4} objects in ${files} file(s), ${runs} runs`);
  console.log(`wall ms:      median ${w.p50}  min ${w.min}  max ${w.max}`);
  console.log(`user+sys ms:  median ${c.p50}  min ${c.min}  max ${c.max}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
