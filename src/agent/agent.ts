/**
 * `meshpilot agent`: wires the cert manager to its outputs. Proxyless gRPC (`--mode grpc`): cert
 * files in --outputDir, the ADS proxy socket, then the gRPC xDS bootstrap (written once the files
 * exist, so an application that waits for the bootstrap finds its certificates). Envoy: the status
 * server, the SDS socket, the ADS proxy socket and the Envoy bootstrap (plus the cert files when
 * OUTPUT_CERTS is set), then Envoy itself, supervised and drained on shutdown (envoy-runner.ts).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { MeshError, errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { Clock } from '../util/clock.js';
import { caClient, type CertSigner } from './ca-client.js';
import { CertManager, type WorkloadSecret } from './cert-manager.js';
import { certFilePaths, writeCertFiles, writeFileAtomic } from './cert-files.js';
import { startAgentDns, type AgentDns } from './dns/agent-dns.js';
import { buildEnvoyBootstrap } from './envoy-bootstrap.js';
import { startEnvoyRunner, type AgentExit, type EnvoyRunner } from './envoy-runner.js';
import { buildGrpcBootstrap } from './grpc-bootstrap.js';
import { buildNode, type AgentNode } from './node-identity.js';
import type { AgentOptions } from './options.js';
import { startSdsServer, type SdsServer } from './sds-server.js';
import { wasmCache } from './wasm/cache.js';
import { rewriteEcdsResponse } from './wasm/ecds-rewrite.js';
import { startXdsProxy, type XdsProxy } from './xds-proxy.js';
import { envoyThenWorkload, healthRequests, probeOnce, startWorkloadHealthChecker } from './workload-health.js';

export interface RunningAgent {
  readonly node: AgentNode;
  readonly certs: CertManager;
  /** Resolves once the first certificate is delivered and the bootstrap is written. */
  readonly ready: Promise<WorkloadSecret>;
  /** Resolves when the agent must exit on its own (envoy mode: /quitquitquit, or Envoy gave up); never in grpc mode. */
  readonly exit: Promise<AgentExit>;
  /** Envoy mode: the running Envoy's pid. */
  envoyPid(): number | undefined;
  /** The graceful part of shutdown (envoy mode: drain Envoy for terminationDrainDuration, then stop it). */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

export interface AgentDeps {
  /** Replaces the gRPC CA client (tests). */
  readonly signer?: CertSigner;
  readonly clock?: Clock;
  /** The environment read for settings the options do not carry (DNS proxy); default process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

async function readTrimmed(file: string): Promise<string | undefined> {
  try {
    const t = (await readFile(file, 'utf8')).trim();
    return t === '' ? undefined : t;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function readRequired(file: string, what: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `${what} ${file}: ${errorMessage(err)}`, { cause: err });
  }
}

/** Envoy's ECDS Wasm configs rewritten to modules the agent fetched and cached (istio-agent's Wasm conversion). */
async function wasmRewriter(opts: AgentOptions, log: Logger): Promise<(bytes: Buffer, delta: boolean) => Promise<Buffer>> {
  const caPem = opts.wasmCaCertFile ? await readRequired(opts.wasmCaCertFile, 'Wasm CA certificate (--wasmCaCert)') : undefined;
  const cache = wasmCache({
    dir: opts.wasmCacheDir,
    fetchOptions: { timeoutMs: 30_000, insecureRegistries: opts.wasmInsecureRegistries, ...(caPem ? { caPem } : {}) },
  });
  return (bytes, delta) => rewriteEcdsResponse(bytes, delta, cache, log);
}

export async function startAgent(opts: AgentOptions, log: Logger, deps: AgentDeps = {}): Promise<RunningAgent> {
  const node = buildNode(opts);
  // Roots are read at start (a missing file fails fast) and again per connection (they may rotate).
  const caRoot = (): Promise<string> => readRequired(opts.caRootCertFile, 'CA root certificate (--caRootCert)');
  const xdsRoot = (): Promise<string> => readRequired(opts.xdsRootCertFile, 'xDS root certificate (--xdsRootCert)');
  const signer =
    deps.signer ?? caClient({ caAddr: opts.caAddr, rootCertPem: caRoot, serverName: opts.istiodSAN, clusterId: opts.clusterId });
  if (!deps.signer) await caRoot();
  if (opts.xdsTransport === 'tls') await xdsRoot();
  const certs = new CertManager({
    signer,
    keyType: opts.keyType,
    identityHint: node.identity,
    ttlMs: opts.secretTtlMs,
    gracePeriodRatio: opts.gracePeriodRatio,
    gracePeriodJitter: opts.gracePeriodJitter,
    retryInitialMs: opts.retryInitialMs,
    retryMaxMs: opts.retryMaxMs,
    ...(opts.tokenFile !== undefined ? { readToken: () => readTrimmed(opts.tokenFile!) } : {}),
    ...(opts.provCertDir !== undefined ? { provisioned: () => readProvisioned(opts.provCertDir!) } : {}),
    ...(deps.clock ? { clock: deps.clock } : {}),
    log: log.child('cert'),
  });
  if (opts.outputDir !== undefined) {
    const dir = opts.outputDir;
    certs.onUpdate(async (s) => {
      const files = await writeCertFiles(dir, s);
      log.info('wrote workload certificate files', { dir: path.resolve(dir), version: s.version, key: files.key });
    });
  }
  let sds: SdsServer | undefined;
  let proxy: XdsProxy | undefined;
  let runner: EnvoyRunner | undefined;
  let dns: AgentDns | undefined;
  try {
    dns = await startAgentDns(opts, deps.env ?? process.env, log.child('dns'));
    if (opts.mode === 'envoy') runner = await startEnvoyRunner(opts, certs, log, () => dns?.proxy.notReadyReason());
    if (opts.mode === 'envoy') sds = await startSdsServer(opts.sdsSocket, certs, log.child('sds'));
    proxy = await startXdsProxy({
      socketPath: opts.xdsSocket,
      upstreamAddr: opts.xdsAddr,
      transport: opts.xdsTransport,
      ...(opts.xdsTransport === 'tls' ? { rootCertPem: xdsRoot } : {}),
      serverName: opts.istiodSAN,
      // The newest certificate for every new upstream connection (the first one expires).
      workloadSecret: async () => {
        await certs.ready();
        return certs.current()!;
      },
      log: log.child('xdsproxy'),
      ...(opts.mode === 'envoy' ? { rewriteResponse: await wasmRewriter(opts, log.child('wasm')) } : {}),
      ...(dns ? { sideChannel: dns.channel } : {}),
    });
  } catch (err) {
    await Promise.all([sds?.stop(), runner?.stop(), dns?.proxy.stop()]);
    throw err;
  }
  certs.start();
  // A VM's readiness probe: its health goes to the control plane on the ADS streams.
  const relay = proxy;
  const envoy = runner;
  const health = opts.readinessProbe
    ? startWorkloadHealthChecker(
        opts.readinessProbe,
        opts.podIp,
        (r) => relay.setHealth(healthRequests(r)),
        log.child('health'),
        (p, host) =>
          // As pilot-agent: Envoy's own readiness counts first, then the workload's probe.
          envoy ? envoyThenWorkload(envoy, p, host) : probeOnce(p, host),
      )
    : undefined;
  let stopped = false;
  const ready = certs.ready().then(async (secret) => {
    const file = opts.mode === 'grpc' ? opts.grpcBootstrapFile : opts.envoyBootstrapFile;
    const bootstrap =
      opts.mode === 'grpc'
        ? buildGrpcBootstrap({
            node,
            serverUri: `unix://${path.resolve(opts.xdsSocket)}`,
            ...(opts.outputDir !== undefined ? { certDir: path.resolve(opts.outputDir) } : {}),
            refreshIntervalMs: opts.certRefreshIntervalMs,
          })
        : buildEnvoyBootstrap({
            node,
            xdsSocket: opts.xdsSocket,
            sdsSocket: opts.sdsSocket,
            xdsApi: opts.envoyXdsApi,
            adminPort: opts.envoy.adminPort,
            prometheusPort: opts.envoy.prometheusPort,
            statusPort: runner?.statusPort ?? opts.envoy.statusPort,
            envoyStatusPort: opts.envoy.envoyStatusPort,
          });
    await writeFileAtomic(file, `${JSON.stringify(bootstrap, null, 2)}\n`, 0o644);
    if (!stopped) runner?.startEnvoy(file);
    log.info('agent ready', {
      mode: opts.mode,
      node: node.id,
      identity: secret.identity,
      bootstrap: path.resolve(file),
      ...(opts.outputDir !== undefined ? { certFiles: certFilePaths(path.resolve(opts.outputDir)) } : {}),
    });
    return secret;
  });
  ready.catch((err: unknown) => log.error('writing the bootstrap failed', { error: errorMessage(err) }));
  return {
    node,
    certs,
    ready,
    exit: runner?.exit ?? new Promise<AgentExit>(() => {}),
    envoyPid: () => runner?.envoyPid(),
    drain: async () => runner?.drain(),
    async stop() {
      stopped = true;
      health?.stop();
      certs.stop();
      await Promise.all([sds?.stop(), proxy?.stop(), runner?.stop(), dns?.proxy.stop()]);
    },
  };
}

/** PROV_CERT: an existing cert-chain.pem + key.pem (e.g. a VM's) to authenticate the first CSR. */
async function readProvisioned(dir: string): Promise<{ certChainPem: string; privateKeyPem: string } | undefined> {
  const files = certFilePaths(dir);
  const [certChainPem, privateKeyPem] = await Promise.all([readTrimmed(files.certChain), readTrimmed(files.key)]);
  return certChainPem !== undefined && privateKeyPem !== undefined
    ? { certChainPem: `${certChainPem}\n`, privateKeyPem: `${privateKeyPem}\n` }
    : undefined;
}
