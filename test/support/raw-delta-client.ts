import { ResponseQueue, type StreamEnd } from './response-queue.js';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import {
  DeltaDiscoveryRequestSchema,
  DeltaDiscoveryResponseSchema,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
} from '../../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { nowMs, SIMULATED_PROXY_CHANNEL, type AdsNode } from './raw-ads-client.js';

export const DELTA_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources';

export interface DeltaReceived {
  readonly resp: DeltaDiscoveryResponse;
  /** Encoded size (message bytes, without gRPC framing). */
  readonly bytes: number;
  readonly at: number;
}

export interface DeltaRequestInit {
  typeUrl: string;
  subscribe?: readonly string[];
  unsubscribe?: readonly string[];
  initialVersions?: Readonly<Record<string, string>>;
  responseNonce?: string;
  errorDetail?: { code: number; message: string };
}

export interface DeltaStreamOptions {
  node: AdsNode;
  /** Own TCP connection instead of grpc-js's shared subchannel. */
  separateConnection?: boolean;
  /** Deliver responses only to `onResponse` listeners (nothing queued nor kept). */
  passive?: boolean;
}

/**
 * One Delta ADS stream driven by hand: every request is exactly what the test says. Tracks, per
 * type, what the client holds (name → version) after applying each response's resources and
 * removals, as Envoy would, for `initial_resource_versions` on a reconnect.
 */
export class DeltaStream {
  readonly node: AdsNode;
  readonly ended: Promise<StreamEnd>;
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientDuplexStream<DeltaDiscoveryRequest, DeltaReceived>;
  private readonly responses: ResponseQueue<DeltaReceived>;
  private readonly listeners: ((r: DeltaReceived) => void)[] = [];
  private readonly held = new Map<string, Map<string, string>>();
  private readonly all: DeltaReceived[] = [];
  private sentNode = false;
  private bytes = 0;

  constructor(
    addr: string,
    private readonly opts: DeltaStreamOptions,
  ) {
    this.node = opts.node;
    const channelOptions: grpc.ChannelOptions = opts.separateConnection ? SIMULATED_PROXY_CHANNEL : {};
    this.client = new grpc.Client(addr, grpc.credentials.createInsecure(), channelOptions);
    this.call = this.client.makeBidiStreamRequest<DeltaDiscoveryRequest, DeltaReceived>(
      DELTA_PATH,
      (req) => Buffer.from(toBinary(DeltaDiscoveryRequestSchema, req)),
      (buf) => ({ resp: fromBinary(DeltaDiscoveryResponseSchema, buf), bytes: buf.length, at: nowMs() }),
    );
    this.call.on('data', (r: DeltaReceived) => this.onData(r));
    this.responses = new ResponseQueue<DeltaReceived>('Delta', this.call);
    this.ended = this.responses.ended;
  }

  private get endInfo(): StreamEnd | undefined {
    return this.responses.endInfo();
  }

  static open(addr: string, opts: DeltaStreamOptions): DeltaStream {
    return new DeltaStream(addr, opts);
  }

  get bytesReceived(): number {
    return this.bytes;
  }

  get history(): readonly DeltaReceived[] {
    return this.all;
  }

  get end(): StreamEnd | undefined {
    return this.endInfo;
  }

  isOpen(): boolean {
    return this.endInfo === undefined;
  }

  /** name → version of every resource of `typeUrl` the client holds now. */
  holdings(typeUrl: string): Record<string, string> {
    return Object.fromEntries(this.held.get(typeUrl) ?? []);
  }

  onResponse(fn: (r: DeltaReceived) => void): void {
    this.listeners.push(fn);
  }

  private onData(r: DeltaReceived): void {
    this.bytes += r.bytes;
    let h = this.held.get(r.resp.typeUrl);
    if (!h) {
      h = new Map();
      this.held.set(r.resp.typeUrl, h);
    }
    for (const res of r.resp.resources) h.set(res.name, res.version);
    for (const name of r.resp.removedResources) h.delete(name);
    for (const fn of this.listeners) fn(r);
    if (this.opts.passive) return;
    this.all.push(r);
    this.responses.deliver(r);
  }

  /** Sends exactly this request (plus `node` on the first one). */
  send(init: DeltaRequestInit): void {
    if (this.endInfo) throw new Error(`Delta stream already ended: ${this.endInfo.code} ${this.endInfo.details}`);
    const withNode = !this.sentNode;
    this.sentNode = true;
    this.call.write(
      create(DeltaDiscoveryRequestSchema, {
        typeUrl: init.typeUrl,
        resourceNamesSubscribe: [...(init.subscribe ?? [])],
        resourceNamesUnsubscribe: [...(init.unsubscribe ?? [])],
        initialResourceVersions: { ...(init.initialVersions ?? {}) },
        responseNonce: init.responseNonce ?? '',
        ...(init.errorDetail ? { errorDetail: { code: init.errorDetail.code, message: init.errorDetail.message } } : {}),
        ...(withNode
          ? {
              node: {
                id: this.node.id,
                cluster: this.node.cluster ?? '',
                ...(this.node.metadata ? { metadata: this.node.metadata } : {}),
                userAgentName: 'meshpilot-raw-delta',
              },
            }
          : {}),
      }),
    );
  }

  subscribe(typeUrl: string, names: readonly string[]): void {
    this.send({ typeUrl, subscribe: names });
  }

  unsubscribe(typeUrl: string, names: readonly string[]): void {
    this.send({ typeUrl, unsubscribe: names });
  }

  ack(resp: DeltaDiscoveryResponse): void {
    this.send({ typeUrl: resp.typeUrl, responseNonce: resp.nonce });
  }

  nack(resp: DeltaDiscoveryResponse, message: string, code = grpc.status.INVALID_ARGUMENT): void {
    this.send({ typeUrl: resp.typeUrl, responseNonce: resp.nonce, errorDetail: { code, message } });
  }

  /** The next unconsumed response (of `typeUrl` if given), waiting up to timeoutMs (default 10 s). */
  next(typeUrl?: string, timeoutMs = 10_000): Promise<DeltaReceived> {
    return this.responses.next(typeUrl, timeoutMs);
  }

  drain(): DeltaReceived[] {
    return this.responses.drain();
  }

  close(): void {
    if (!this.endInfo) {
      try {
        this.call.end();
      } catch {
        /* ignore */
      }
      this.call.cancel();
    }
    this.client.close();
  }
}
