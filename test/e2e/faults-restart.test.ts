/**
 * SIGKILL and restart: 100 SotW clients (sidecar nodes asking for CDS and LDS,
 * each retrying its stream 200 ms after it fails — Envoy's ADS retry starts at 500 ms) are
 * synced; meshpilot is killed with SIGKILL and started again on the same port with the default
 * admission (PILOT_MAX_REQUESTS_PER_SECOND unset). Every client is answered by the new process
 * within 2 s of its /ready: the admission queue admits a storm as fast as the server answers it,
 * not at 25 streams a second. (How soon real clients come back depends on their own backoff: the
 * soak part `sigkill` measures it with the load generator's grpc-like backoff.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { serviceEntry, workloadEntry } from '../support/mesh-fixtures.js';
import { freePorts } from '../support/ports.js';
import { AdsStream } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { TYPE } from '../support/xds-resources.js';
import { writeYaml } from '../support/yaml-files.js';

const CLIENTS = 100;
const RETRY_MS = 200;

/** A client that keeps one stream up: on failure it opens a new one after RETRY_MS. */
class RetryingClient {
  stream: AdsStream | undefined;
  /** Time (ms, performance.now) of the first CDS response on the current stream. */
  servedAt: number | undefined;
  #closed = false;
  constructor(
    readonly addr: string,
    readonly pod: string,
  ) {
    this.open();
  }
  open(): void {
    if (this.#closed) return;
    const s = AdsStream.open(this.addr, {
      node: { id: `sidecar~127.0.0.1~${this.pod}.default~default.svc.cluster.local`, metadata: { NAMESPACE: 'default' } },
      passive: true,
    });
    this.stream = s;
    this.servedAt = undefined;
    s.onResponse((r) => {
      if (r.resp.typeUrl === TYPE.CDS && this.servedAt === undefined) this.servedAt = performance.now();
      s.ack(r.resp);
    });
    s.subscribe(TYPE.CDS, []);
    s.subscribe(TYPE.LDS, []);
    void s.ended.then(() => {
      s.close();
      setTimeout(() => this.open(), RETRY_MS);
    });
  }
  close(): void {
    this.#closed = true;
    this.stream?.close();
  }
}

let dir: TempDir | undefined;
const servers: Meshpilot[] = [];
const clients: RetryingClient[] = [];

describe('faults: SIGKILL and restart', () => {
  before(async () => {
    dir = tempDir('meshpilot-faults-restart-');
    await writeYaml(dir.path, 'mesh.yaml', [
      serviceEntry('echo', { host: 'echo.default.svc.cluster.local', selector: { app: 'echo' } }),
      workloadEntry('echo-1', { port: 9001, labels: { app: 'echo' } }),
    ]);
  });

  after(async () => {
    for (const c of clients) c.close();
    for (const mp of servers) await mp.stop();
    await dir?.remove();
  });

  it(`${CLIENTS} clients are answered by the new process within 2 s of its /ready`, async () => {
    assert.ok(dir);
    const [port] = await freePorts(1);
    const addr = `127.0.0.1:${port}`;
    const start = async (): Promise<Meshpilot> => {
      assert.ok(dir);
      const mp = await startMeshpilot({ configDir: dir.path, args: ['--grpcAddr', addr], readyTimeoutMs: 60_000 });
      servers.push(mp);
      return mp;
    };
    const first = await start();
    for (let i = 0; i < CLIENTS; i++) clients.push(new RetryingClient(addr, `restart-${i}`));
    await waitFor(() => clients.every((c) => c.servedAt !== undefined), {
      timeoutMs: 30_000,
      description: 'all clients synced before the kill',
    });

    process.kill(first.pid, 'SIGKILL');
    await first.exited;
    await waitFor(() => clients.every((c) => c.servedAt === undefined), { timeoutMs: 10_000, description: 'every stream saw the kill' });
    const second = await start();
    const readyAt = performance.now();
    await waitFor(() => clients.every((c) => c.servedAt !== undefined), {
      timeoutMs: 30_000,
      intervalMs: 20,
      description: 'all clients answered by the new process',
    });
    const lastMs = Math.max(...clients.map((c) => (c.servedAt ?? Infinity) - readyAt));
    process.stderr.write(
      `# SIGKILL restart: ${CLIENTS} clients answered by the new process at most ${Math.round(lastMs)} ms after /ready\n`,
    );
    assert.ok(second.alive());
    assert.ok(lastMs <= 2000, `the last client was answered ${Math.round(lastMs)} ms after /ready`);
  });
});
