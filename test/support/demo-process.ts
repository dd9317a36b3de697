/**
 * `meshpilot demo` as the tests run it: on a copy of examples/bookinfo whose workloads listen on
 * free ports (not the example's 19080–19085), with meshpilot's ports free ones too, printing plain
 * lines. The caller stops it (SIGINT) or it is killed when the test process exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { trackChild } from './cleanup.js';
import { MESHPILOT_CLI, REPO_ROOT } from './paths.js';
import { freePorts } from './ports.js';

export interface DemoProcess {
  readonly child: ChildProcess;
  /** The copied config directory the demo watches. */
  readonly configDir: string;
  readonly grpcAddr: string;
  /** stdout lines so far (one per second). */
  readonly lines: string[];
  /** stderr lines so far (what it started, the data plane, errors). */
  readonly errLines: string[];
  /** The last lines of both, for assertion messages. */
  why(): string;
}

/** Copies the example into `dir`/bookinfo with free app ports and starts the demo on it. */
export async function startDemo(dir: string, duration = '300s', extraArgs: readonly string[] = []): Promise<DemoProcess> {
  const configDir = join(dir, 'bookinfo');
  // Without state an earlier `npm start` may have left there (the test checks the demo writes none).
  cpSync(join(REPO_ROOT, 'examples', 'bookinfo'), configDir, {
    recursive: true,
    filter: (src) => !src.split(/[\\/]/).includes('.meshpilot'),
  });
  const ports = await freePorts(10);
  for (const file of ['workloads.yaml', 'services.yaml']) {
    let text = readFileSync(join(configDir, file), 'utf8');
    for (let i = 0; i < 6; i++) text = text.replace(`: 1908${i}}`, `: ${ports[i]}}`);
    writeFileSync(join(configDir, file), text);
  }
  const [grpc, secure, http, monitoring] = ports.slice(6) as [number, number, number, number];
  const grpcAddr = `127.0.0.1:${grpc}`;
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      MESHPILOT_CLI,
      'demo',
      '--configDir',
      configDir,
      '--plain',
      '--duration',
      duration,
      '--grpcAddr',
      grpcAddr,
      '--secureGRPCAddr',
      `127.0.0.1:${secure}`,
      '--httpAddr',
      `127.0.0.1:${http}`,
      '--monitoringAddr',
      `127.0.0.1:${monitoring}`,
      ...extraArgs,
    ],
    {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GRPC_XDS'))),
    },
  );
  trackChild(child);
  const lines: string[] = [];
  const errLines: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => lines.push(l));
  createInterface({ input: child.stderr! }).on('line', (l) => errLines.push(l));
  const why = (): string => `--- demo stdout ---\n${lines.slice(-10).join('\n')}\n--- demo stderr ---\n${errLines.slice(-20).join('\n')}`;
  return { child, configDir, grpcAddr, lines, errLines, why };
}

/** `t=3s reviews v1=41 reviews v3=9 errors=0` → counts by version and the error count. */
export function parseDemoLine(line: string): { counts: Map<string, number>; errors: number } | undefined {
  if (!line.startsWith('t=')) return undefined;
  const counts = new Map<string, number>();
  for (const m of line.matchAll(/reviews (v\d+)=(\d+)/g)) counts.set(m[1]!, Number(m[2]));
  return { counts, errors: Number(/errors=(\d+)/.exec(line)?.[1] ?? 'NaN') };
}

/** Whether the demo printed `n` seconds with answers. */
export function answeredSeconds(d: DemoProcess): number {
  return d.lines.map(parseDemoLine).filter((p) => p !== undefined && [...p.counts.values()].some((n) => n > 0)).length;
}
