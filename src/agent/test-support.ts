/**
 * Test-only helpers. An in-process CA that signs the agent's CSRs with the CA module's own certificate
 * templates, and records what it was asked (credential kinds, TTLs) — never the key.
 */
import { fromBinary, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import {
  DeltaDiscoveryRequestSchema,
  DeltaDiscoveryResponseSchema,
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
} from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import { ADS_SERVICE } from '../xds/ads-service.js';
import { createSelfSignedRoot, issueLeaf } from '../security/ca/certificates.js';
import { exportPrivateKeyPem, generateKeyPair, x509 } from '../security/crypto.js';
import type { CaCredential, CertSigner, SignRequest } from './ca-client.js';
import { DEFAULT_TRUST_DOMAIN } from '../config/constants.js';

export interface TestCa {
  readonly rootPem: string;
  readonly signer: CertSigner;
  /** One entry per sign() call, in order. */
  readonly requests: { readonly auth: CaCredential['kind']; readonly ttlSeconds: number; readonly csrPem: string }[];
  /** Makes the next `n` calls fail with `err` (the request is still recorded). */
  failNext(n: number, err?: Error): void;
  /** Makes every call with this credential kind fail. */
  refuse(kind: CaCredential['kind'] | undefined): void;
  /** A serving certificate (chain up to the root) and key for `names` (DNS names or SPIFFE IDs). */
  issue(names: string[]): Promise<{ certChainPem: string; privateKeyPem: string }>;
}

export async function createTestCa(opts: { identity: string; now?: () => number; trustDomain?: string }): Promise<TestCa> {
  const keys = await generateKeyPair('ECDSA');
  const now = opts.now ?? Date.now;
  const root = await createSelfSignedRoot(keys, {
    trustDomain: opts.trustDomain ?? DEFAULT_TRUST_DOMAIN,
    ttlMs: 10 * 365 * 86_400_000,
    now: new Date(now() - 3_600_000),
  });
  const requests: TestCa['requests'][number][] = [];
  let failures = 0;
  let failure = new Error('CA unavailable (test)');
  let refused: CaCredential['kind'] | undefined;
  const rootPem = root.toString('pem') + '\n';
  return {
    rootPem,
    requests,
    failNext(n, err) {
      failures = n;
      if (err) failure = err;
    },
    refuse(kind) {
      refused = kind;
    },
    async issue(names) {
      const k = await generateKeyPair('ECDSA');
      const leaf = await issueLeaf({
        signer: { cert: root, keys },
        publicKey: k.publicKey,
        subjectIds: names,
        ttlMs: 86_400_000,
        now: new Date(now()),
      });
      return { certChainPem: `${leaf.toString('pem')}\n${rootPem}`, privateKeyPem: await exportPrivateKeyPem(k.privateKey) };
    },
    signer: {
      async sign(req: SignRequest): Promise<string[]> {
        requests.push({ auth: req.credential.kind, ttlSeconds: req.ttlSeconds, csrPem: req.csrPem });
        if (failures > 0) {
          failures--;
          throw failure;
        }
        if (refused === req.credential.kind) throw new Error(`UNAUTHENTICATED: ${req.credential.kind} refused (test)`);
        const csr = new x509.Pkcs10CertificateRequest(req.csrPem);
        const leaf = await issueLeaf({
          signer: { cert: root, keys },
          publicKey: csr.publicKey,
          subjectIds: [opts.identity],
          ttlMs: req.ttlSeconds * 1000,
          now: new Date(now()),
        });
        return [leaf.toString('pem'), root.toString('pem')];
      },
    },
  };
}

function adsMethod<I extends DescMessage, O extends DescMessage>(
  name: string,
  i: I,
  o: O,
): grpc.MethodDefinition<MessageShape<I>, MessageShape<O>> {
  return {
    path: `/${ADS_SERVICE}/${name}`,
    requestStream: true,
    responseStream: true,
    requestSerialize: (m) => Buffer.from(toBinary(i, m)),
    requestDeserialize: (b) => fromBinary(i, b),
    responseSerialize: (m) => Buffer.from(toBinary(o, m)),
    responseDeserialize: (b) => fromBinary(o, b),
  };
}

/** Typed ADS (SotW + Delta) for test clients and stand-in control planes. */
export const adsTestDefinition = {
  StreamAggregatedResources: adsMethod('StreamAggregatedResources', DiscoveryRequestSchema, DiscoveryResponseSchema),
  DeltaAggregatedResources: adsMethod('DeltaAggregatedResources', DeltaDiscoveryRequestSchema, DeltaDiscoveryResponseSchema),
};
export const AdsTestClient = grpc.makeGenericClientConstructor(adsTestDefinition, 'ADS');

type Reply = { versionInfo?: string; systemVersionInfo?: string };

/** Opens a stream, sends `req`, resolves with the first response (then cancels), rejects on a non-OK status. */
export function firstAdsReply(client: grpc.Client, which: keyof typeof adsTestDefinition, req: unknown): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const call = (client as unknown as Record<string, () => grpc.ClientDuplexStream<unknown, Reply>>)[which]!();
    call.on('data', (r: Reply) => {
      resolve(r);
      call.cancel();
    });
    call.on('error', (e: grpc.ServiceError) => (e.code === grpc.status.CANCELLED ? undefined : reject(e)));
    call.write(req);
  });
}
