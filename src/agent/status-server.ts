/**
 * The agent's status server (pilot-agent's, on ProxyConfig statusPort 15020):
 *  - `/healthz/ready`: 200 once the workload has its certificate and Envoy has its first config
 *    and is LIVE with workers started, else 503 with the reason (Envoy's 15021 routes here too);
 *  - `/stats/prometheus` (and `/metrics`): the agent's own metrics (`istio_agent_*`), Envoy's
 *    (scraped from its Prometheus listener) and a sidecar app's (ISTIO_PROMETHEUS_ANNOTATIONS,
 *    from injection's prometheus.io merge), concatenated in that order;
 *  - `/app-health/<container>/livez|readyz|startupz`: the app probes injection rewrote;
 *  - `POST /quitquitquit` (from localhost): the agent shuts down as on SIGTERM.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Registry, collectDefaultMetrics } from 'prom-client';
import { MeshError, errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { runAppProbe, type AppProbers } from './app-probers.js';

/** The agent's own metrics, named as pilot-agent's (its registry adds the `istio_agent_` prefix). */
export class AgentMetrics {
  readonly registry = new Registry();
  readonly scrapes = new Counter({ name: 'istio_agent_scrapes_total', help: 'The total number of scrapes.', registers: [this.registry] });
  readonly envoyScrapeErrors = new Counter({
    name: 'istio_agent_envoy_scrape_failures_total',
    help: 'The total number of failed scrapes for envoy.',
    registers: [this.registry],
  });
  readonly appScrapeErrors = new Counter({
    name: 'istio_agent_app_scrape_failures_total',
    help: 'The total number of failed scrapes for app.',
    registers: [this.registry],
  });
  readonly envoyRestarts = new Counter({
    name: 'istio_agent_envoy_restarts_total',
    help: 'Restarts of an Envoy that exited on its own.',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'istio_agent_' });
  }
}

export interface StatusServerOptions {
  readonly port: number;
  /** Address to listen on (pilot-agent: every address, the kubelet probes the pod IP). */
  readonly host?: string;
  /** Why the proxy is not ready, or undefined when it is. */
  readonly notReadyReason: () => Promise<string | undefined>;
  /** Envoy's Prometheus endpoint (`http://127.0.0.1:15090/stats/prometheus`). */
  readonly envoyStatsUrl: string;
  readonly metrics: AgentMetrics;
  readonly probers: AppProbers;
  /** The app's metrics endpoints on localhost, scraped last (an OpenMetrics `# EOF` must end the page). */
  readonly appMetrics?: readonly AppMetricsTarget[];
  /** Where app probes go (the pod IP, as the kubelet would have probed). */
  readonly probeDestination: string;
  /** The pod's loopback address (127.0.0.1, or ::1 for an IPv6 pod), where the app's metrics are scraped. */
  readonly loopback?: string;
  readonly onQuit: () => void;
  readonly log: Logger;
}

export interface AppMetricsTarget {
  readonly port: string;
  readonly path: string;
}

/**
 * ISTIO_PROMETHEUS_ANNOTATIONS (`{"scrape":"true","path":"/m","port":"9090","targets":[…]}`, which
 * injection writes from the pod's prometheus.io annotations) → what to scrape, as pilot-agent reads
 * it: nothing when scrape is "false", path /metrics and port 80 by default, never the status port.
 */
export function parseAppMetrics(json: string, statusPort: number): AppMetricsTarget[] {
  if (json.trim() === '') return [];
  let cfg: { scrape?: string; path?: string; port?: string; targets?: { port?: string; path?: string }[] };
  try {
    cfg = JSON.parse(json) as typeof cfg;
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `ISTIO_PROMETHEUS_ANNOTATIONS: not JSON (${errorMessage(err)})`);
  }
  if (cfg.scrape === 'false') return [];
  const listed = cfg.targets !== undefined && cfg.targets.length > 0 ? cfg.targets : [{ port: cfg.port, path: cfg.path }];
  const targets = listed.map((t) => ({ port: t.port || '80', path: t.path || '/metrics' }));
  for (const t of targets) {
    if (t.port === String(statusPort)) {
      throw new MeshError(
        'INVALID_ARGUMENT',
        `ISTIO_PROMETHEUS_ANNOTATIONS: the application port ${t.port} is the agent's status port, which would scrape itself`,
      );
    }
  }
  return targets;
}

export interface StatusServer {
  readonly port: number;
  close(): Promise<void>;
}

const PROM_TEXT = 'text/plain; version=0.0.4; charset=utf-8';
/** Headers Prometheus sends that the scrape of Envoy passes on, as pilot-agent does. */
const SCRAPE_HEADERS = ['accept', 'user-agent', 'x-prometheus-scrape-timeout-seconds'];

function isLoopback(addr: string | undefined): boolean {
  return addr !== undefined && (addr.startsWith('127.') || addr === '::1' || addr.startsWith('::ffff:127.'));
}

async function scrape(url: string, req: http.IncomingMessage): Promise<{ text: string; contentType: string }> {
  const headers: Record<string, string> = {};
  for (const h of SCRAPE_HEADERS) {
    const v = req.headers[h];
    if (typeof v === 'string') headers[h] = v;
  }
  const timeoutS = Number(headers['x-prometheus-scrape-timeout-seconds']);
  const res = await fetch(url, {
    headers,
    signal: AbortSignal.timeout(Number.isFinite(timeoutS) && timeoutS > 0 ? timeoutS * 1000 : 10_000),
  });
  if (!res.ok) throw new MeshError('UNAVAILABLE', `scraping ${url}: HTTP ${res.status}`);
  return { text: await res.text(), contentType: res.headers.get('content-type') ?? '' };
}

export async function startStatusServer(o: StatusServerOptions): Promise<StatusServer> {
  let lastReady = false;
  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://status').pathname;
    if (path === '/healthz/ready') {
      let reason: string | undefined;
      try {
        reason = await o.notReadyReason();
      } catch (err) {
        reason = errorMessage(err);
      }
      if (reason === undefined && !lastReady) o.log.info('Envoy proxy is ready');
      if (reason !== undefined) o.log.warn('Envoy proxy is NOT ready', { reason });
      lastReady = reason === undefined;
      res.writeHead(reason === undefined ? 200 : 503, { 'content-type': 'text/plain' }).end(reason ?? '');
      return;
    }
    if (path === '/stats/prometheus' || path === '/metrics') {
      o.metrics.scrapes.inc();
      let envoy = '';
      try {
        envoy = (await scrape(o.envoyStatsUrl, req)).text;
      } catch (err) {
        // Envoy's metrics missing must not drop the others: the failure is counted and logged.
        o.metrics.envoyScrapeErrors.inc();
        o.log.warn('failed scraping envoy metrics', { error: errorMessage(err) });
      }
      let app = '';
      let contentType = PROM_TEXT;
      for (const t of o.appMetrics ?? []) {
        try {
          const host = (o.loopback ?? '127.0.0.1').includes(':') ? `[${o.loopback}]` : (o.loopback ?? '127.0.0.1');
          const got = await scrape(`http://${host}:${t.port}${t.path}`, req);
          app += got.text;
          // The page takes the app's format: its OpenMetrics `# EOF` then ends it.
          if (got.contentType.startsWith('application/openmetrics-text')) contentType = got.contentType;
        } catch (err) {
          o.metrics.appScrapeErrors.inc();
          o.log.warn('failed scraping application metrics', { error: errorMessage(err) });
        }
      }
      const agent = await o.metrics.registry.metrics();
      const nl = (t: string): string => (t === '' || t.endsWith('\n') ? t : `${t}\n`);
      res.writeHead(200, { 'content-type': contentType }).end(`${nl(agent)}${nl(envoy)}${app}`);
      return;
    }
    if (path === '/quitquitquit') {
      if (!isLoopback(req.socket.remoteAddress)) return void res.writeHead(403).end('Only requests from localhost are allowed');
      if (req.method !== 'POST') return void res.writeHead(405).end('Method Not Allowed');
      res.writeHead(200).end('OK');
      o.log.info('handling /quitquitquit, notifying the agent to exit');
      o.onQuit();
      return;
    }
    if (path.startsWith('/app-health/')) {
      const prober = o.probers.get(path);
      if (prober === undefined) return void res.writeHead(400).end(`app prober config does not exist for ${path}`);
      res.writeHead(await runAppProbe(prober, o.probeDestination, req.headers)).end();
      return;
    }
    res.writeHead(404).end(`no status endpoint ${path}\n`);
  };
  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      o.log.error('status request failed', { path: req.url, error: errorMessage(err) });
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(new MeshError('UNAVAILABLE', `status server on port ${o.port}: ${errorMessage(err)}`, { cause: err })),
    );
    server.listen(o.port, o.host ?? '0.0.0.0', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  o.log.info('status server listening', { port });
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
