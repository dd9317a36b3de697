/**
 * Self-tests of the shared helpers, independent of meshpilot: a stub ADS server (grpc-js with
 * protobuf-es serialisers) exercises the raw ADS client; the gRPC backend answers Whoami.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { anyPack } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { after, describe, it } from 'node:test';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import {
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { startGrpcBackend, WHOAMI_PATH } from './grpc-backend.js';
import { freePorts } from './ports.js';
import { ADS_PATH, AdsStream, proxylessAdsNode } from './raw-ads-client.js';
import { tempDir } from './temp-dir.js';
import { quietWindow, waitFor } from './wait.js';
import { decodeResources, TYPE } from './xds-resources.js';
import { writeYaml } from './yaml-files.js';

/** Answers every request that is not an ACK with one Listener per requested name. */
async function stubAds(): Promise<{ addr: string; requests: DiscoveryRequest[]; stop: () => void }> {
  const requests: DiscoveryRequest[] = [];
  const server = new grpc.Server();
  let nonce = 0;
  server.addService(
    {
      StreamAggregatedResources: {
        path: ADS_PATH,
        requestStream: true,
        responseStream: true,
        requestSerialize: (m: DiscoveryRequest) => Buffer.from(toBinary(DiscoveryRequestSchema, m)),
        requestDeserialize: (b: Buffer) => fromBinary(DiscoveryRequestSchema, b),
        responseSerialize: (m: DiscoveryResponse) => Buffer.from(toBinary(DiscoveryResponseSchema, m)),
        responseDeserialize: (b: Buffer) => fromBinary(DiscoveryResponseSchema, b),
      },
    },
    {
      StreamAggregatedResources: (call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>) => {
        call.on('data', (req: DiscoveryRequest) => {
          requests.push(req);
          if (req.responseNonce !== '') return; // ACK or NACK
          call.write(
            create(DiscoveryResponseSchema, {
              typeUrl: req.typeUrl,
              versionInfo: 'v1',
              nonce: String(++nonce),
              resources: req.resourceNames.map((n) => anyPack(ListenerSchema, create(ListenerSchema, { name: n }))),
            }),
          );
        });
        call.on('end', () => call.end());
      },
    },
  );
  const port = await new Promise<number>((res, rej) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))),
  );
  return { addr: `127.0.0.1:${port}`, requests, stop: () => server.forceShutdown() };
}

describe('test/support helpers', () => {
  const cleanups: (() => unknown)[] = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('freePorts returns distinct ports', async () => {
    const ps = await freePorts(5);
    assert.equal(new Set(ps).size, 5);
  });

  it('waitFor returns the value and times out with the description', async () => {
    let n = 0;
    assert.equal(await waitFor(() => (++n >= 3 ? n : false), { intervalMs: 1 }), 3);
    await assert.rejects(
      waitFor(() => false, { timeoutMs: 30, intervalMs: 5, description: 'never' }),
      /never/,
    );
  });

  it('writeYaml writes multi-document YAML without leaving temp files', async () => {
    const d = tempDir();
    cleanups.push(() => d.remove());
    await writeYaml(d.path, 'a.yaml', [{ a: 1 }, { b: 2 }]);
    assert.deepEqual(await readdir(d.path), ['a.yaml']);
    assert.equal(await readFile(`${d.path}/a.yaml`, 'utf8'), 'a: 1\n---\nb: 2\n');
  });

  it('the gRPC backend answers Whoami with its name and the headers it saw', async () => {
    const b = await startGrpcBackend('vX');
    cleanups.push(() => b.stop());
    const c = new grpc.Client(b.address, grpc.credentials.createInsecure());
    cleanups.push(() => c.close());
    const md = new grpc.Metadata();
    md.set('x-test', 'yes');
    const reply = await new Promise<Buffer>((res, rej) =>
      c.makeUnaryRequest(
        WHOAMI_PATH,
        (x: Buffer) => x,
        (x: Buffer) => x,
        Buffer.alloc(0),
        md,
        (e, v) => (e || !v ? rej(e) : res(v)),
      ),
    );
    const parsed = JSON.parse(reply.toString()) as { backend: string; headers: Record<string, string> };
    assert.equal(parsed.backend, 'vX');
    assert.equal(parsed.headers['x-test'], 'yes');
    assert.equal(b.hits(), 1);
  });

  it('AdsStream: subscribe, decode, ACK and NACK carry the right version, nonce and names', async () => {
    const stub = await stubAds();
    cleanups.push(stub.stop);
    const node = proxylessAdsNode('self-test');
    const s = AdsStream.open(stub.addr, { node });
    cleanups.push(() => s.close());
    s.subscribe(TYPE.LDS, ['a:1', 'b:2']);
    const r = await s.next(TYPE.LDS);
    assert.deepEqual(
      decodeResources(r.resp, ListenerSchema).map((l) => l.name),
      ['a:1', 'b:2'],
    );
    assert.ok(r.bytes > 0 && s.bytesReceived === r.bytes);
    s.ack(r.resp);
    s.nack(r.resp, 'nope');
    await waitFor(() => stub.requests.length === 3);
    const [first, ack, nack] = stub.requests;
    assert.equal(first?.node?.id, node.id);
    assert.deepEqual(first?.node?.metadata, { GENERATOR: 'grpc', NAMESPACE: 'default' });
    assert.equal(ack?.node, undefined, 'node only on the first request');
    assert.deepEqual([ack?.versionInfo, ack?.responseNonce, ack?.resourceNames], ['v1', r.resp.nonce, ['a:1', 'b:2']]);
    assert.deepEqual([nack?.versionInfo, nack?.responseNonce, nack?.errorDetail?.message], ['v1', r.resp.nonce, 'nope']);
    await quietWindow(100);
    assert.deepEqual(s.drain(), []);
    s.close();
    const end = await s.ended;
    assert.equal(end.code, grpc.status.CANCELLED);
  });
});
