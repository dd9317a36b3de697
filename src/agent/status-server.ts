/**
 * The agent's status server (pilot-agent's, on ProxyConfig statusPort 15020):
 *  - `/healthz/ready`: 200 once the workload has its certificate and Envoy has its first config
 *    and is LIVE with workers started, else 503 with the reason (Envoy's 15021 routes here too);
 *  - `/stats/prometheus` (and `/metrics`): the agent's own metrics (`istio_agent_*`) followed by
 *    Envoy's, scraped from its Prometheus listener, in one text exposition;
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
  readonly envoyScrapeErrors = new Counter({ name: 'istio_agent_envoy_scrape_failures_total', help: 'The total number of failed scrapes for envoy.', registers: [this.registry] });
  readonly envoyRestarts = new Counter({ name: 'istio_agent_envoy_restarts_total', help: 'Restarts of an Envoy that exited on its own.', registers: [this.registry] });

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
  /** Where app probes go (the pod IP, as the kubelet would have probed). */
  readonly probeDestination: string;
  readonly onQuit: () => void;
  readonly log: Logger;
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

async function scrapeEnvoy(url: string, req: http.IncomingMessage): Promise<string> {
  const headers: Record<string, string> = {};
  for (const h of SCRAPE_HEADERS) {
    const v = req.headers[h];
    if (typeof v === 'string') headers[h] = v;
  }
  const timeoutS = Number(headers['x-prometheus-scrape-timeout-seconds']);
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(Number.isFinite(timeoutS) && timeoutS > 0 ? timeoutS * 1000 : 10_000) });
  if (!res.ok) throw new MeshError('UNAVAILABLE', `scraping ${url}: HTTP ${res.status}`);
  return res.text();
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
        envoy = await scrapeEnvoy(o.envoyStatsUrl, req);
      } catch (err) {
        // Envoy's metrics missing must not drop the agent's: the failure is counted and logged.
        o.metrics.envoyScrapeErrors.inc();
        o.log.warn('failed scraping envoy metrics', { error: errorMessage(err) });
      }
      const agent = await o.metrics.registry.metrics();
      res.writeHead(200, { 'content-type': PROM_TEXT }).end(`${agent}${agent.endsWith('\n') ? '' : '\n'}${envoy}`);
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
    server.once('error', (err) => reject(new MeshError('UNAVAILABLE', `status server on port ${o.port}: ${errorMessage(err)}`, { cause: err })));
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
