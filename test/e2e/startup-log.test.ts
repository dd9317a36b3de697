/**
 * `meshpilot discovery` as a person starts it: istiod's text log format by default, JSON lines
 * with --log_as_json, and a start-up summary that counts every object of the config directory.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { terminate, trackChild } from '../support/cleanup.js';
import { MESHPILOT_CLI, PARENT_WATCHDOG_URL, REPO_ROOT } from '../support/paths.js';
import { freePorts } from '../support/ports.js';
import { tempDir } from '../support/temp-dir.js';

const TEXT_LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\t(debug|info|warn|error)\t/;

/** Runs discovery on a copy of examples/bookinfo until its `ready` line; returns every stderr line up to it. */
async function startupLines(extra: readonly string[]): Promise<string[]> {
  const dir = tempDir('meshpilot-startup-');
  after(() => dir.remove());
  const config = join(dir.path, 'config');
  cpSync(join(REPO_ROOT, 'examples', 'bookinfo'), config, { recursive: true });
  const [grpc, http, mon] = await freePorts(3);
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  delete env.KUBERNETES_SERVICE_HOST;
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--import',
      PARENT_WATCHDOG_URL,
      MESHPILOT_CLI,
      'discovery',
      '--configDir',
      config,
      '--grpcAddr',
      `127.0.0.1:${grpc}`,
      '--httpAddr',
      `127.0.0.1:${http}`,
      '--monitoringAddr',
      `127.0.0.1:${mon}`,
      '--secureGRPCAddr',
      '127.0.0.1:0',
      '--httpsAddr',
      '127.0.0.1:0',
      ...extra,
    ],
    { cwd: REPO_ROOT, env, stdio: ['pipe', 'ignore', 'pipe'] },
  );
  trackChild(child);
  try {
    return await new Promise<string[]>((resolve, reject) => {
      const lines: string[] = [];
      let buf = '';
      const timer = setTimeout(() => reject(new Error(`no ready line within 60 s:\n${lines.join('\n')}`)), 60_000);
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        buf += d;
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          lines.push(line);
          if (/\tready\t|"msg":"ready"/.test(line)) {
            clearTimeout(timer);
            // Up to the ready line: what follows (a push, under load) is not the start-up.
            resolve([...lines]);
            return;
          }
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`meshpilot exited (${code}):\n${lines.join('\n')}${buf}`));
      });
    });
  } finally {
    await terminate(child);
  }
}

describe('meshpilot discovery start-up log', { timeout: 120_000 }, () => {
  it("text by default: every line in istiod's format, a summary of 12 objects, the listeners and how to connect", async () => {
    const lines = await startupLines([]);
    for (const l of lines) assert.match(l, TEXT_LINE, l);
    const msg = (re: RegExp): string =>
      lines.find((l) => re.test(l.split('\t').slice(2).join('\t'))) ?? assert.fail(`no line matching ${re}:\n${lines.join('\n')}`);
    assert.match(
      msg(/^config loaded: /),
      /\tconfig loaded: 12 objects \(ServiceEntry 4, WorkloadEntry 5, VirtualService 2, DestinationRule 1\), 0 errors\tobjects=12 errors=0 /,
    );
    const listening = msg(/^listening: /);
    for (const what of [
      'xDS gRPC 127.0.0.1:',
      'xDS gRPC TLS + CA 127.0.0.1:',
      'HTTP (ready, debug) 127.0.0.1:',
      'monitoring 127.0.0.1:',
      'webhooks HTTPS 127.0.0.1:',
    ])
      assert.ok(listening.includes(what), `${what} in ${listening}`);
    assert.match(msg(/^connect: /), /meshctl proxy-status --xds-address 127\.0\.0\.1:\d+/);
    assert.match(lines.at(-1)!, /\tinfo\tready\tobjects=12 errors=0 pushVersion=/);
  });

  it('--log_as_json: one JSON object per line; the ready line counts objects', async () => {
    const lines = await startupLines(['--log_as_json']);
    const recs = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const ready = recs.at(-1)!;
    assert.equal(ready.msg, 'ready');
    assert.equal(ready.objects, 12);
    assert.equal(ready.errors, 0);
    const loaded = recs.find((r) => String(r.msg).startsWith('config loaded:'));
    assert.deepEqual(loaded?.kinds, { ServiceEntry: 4, WorkloadEntry: 5, VirtualService: 2, DestinationRule: 1 });
  });
});
