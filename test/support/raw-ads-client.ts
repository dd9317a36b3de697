import { ResponseQueue, type StreamEnd } from './response-queue.js';
import { create, fromBinary, toBinary, type JsonObject } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import {
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../../src/gen/envoy/service/discovery/v3/discovery_pb.js';

export const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

export interface AdsNode {
  readonly id: string;
  readonly metadata?: JsonObject;
  readonly cluster?: string;
}

/** Node of a proxyless gRPC client (`GENERATOR: grpc`) as meshpilot expects it. */
export function proxylessAdsNode(pod: string, namespace = 'default', ip = '127.0.0.1'): AdsNode {
  return {
    id: `sidecar~${ip}~${pod}.${namespace}~${namespace}.svc.cluster.local`,
    metadata: { GENERATOR: 'grpc', NAMESPACE: namespace },
  };
}

export interface Received {
  readonly resp: DiscoveryResponse;
  /** Encoded size on the wire (message bytes, without gRPC framing). */
  readonly bytes: number;
  /** Epoch milliseconds (sub-ms resolution; comparable across processes on one machine). */
  readonly at: number;
  /** The encoded response, when the stream was opened with keepRaw. */
  readonly raw?: Buffer;
}

export type { StreamEnd } from './response-queue.js';

export interface RequestInit {
  typeUrl: string;
  resourceNames?: readonly string[];
  versionInfo?: string;
  responseNonce?: string;
  errorDetail?: { code: number; message: string };
}

/**
 * A simulated proxy's channel: its own connection, with Envoy's default HTTP/2 receive windows
 * (256 MiB per stream and connection) — with Node's 64 KiB default a megabyte of CDS trickles in
 * one window per round trip, which no Envoy does.
 */
export const SIMULATED_PROXY_CHANNEL: grpc.ChannelOptions = {
  'grpc.use_local_subchannel_pool': 1,
  'grpc-node.flow_control_window': 268_435_456,
};

export interface AdsStreamOptions {
  node: AdsNode;
  /** Own TCP connection instead of grpc-js's shared subchannel (the bench: one connection per simulated proxy). */
  separateConnection?: boolean;
  /** Keep each response's encoded bytes in `Received.raw`. */
  keepRaw?: boolean;
  /** Send `node` on every request, not only the first (Envoy's set_node_on_first_message_only=false). */
  nodeOnEveryRequest?: boolean;
  /**
   * Deliver responses only to `onResponse` listeners: nothing is queued for `next()` nor kept in
   * `history` (the bench: thousands of responses, memory must not grow).
   */
  passive?: boolean;
  /** Decodes a response (default: protobuf-es fromBinary); the bench's simulated proxies read only what they use. */
  decode?: (buf: Buffer) => DiscoveryResponse;
}

/** Epoch ms with sub-millisecond resolution. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

interface TypeState {
  names: string[];
  /** Version of the last response we ACKed. */
  accepted: string;
  /** Nonce of the last response we saw of this type. */
  nonce: string;
}

/**
 * One ADS (SotW) stream driven by hand: what is sent is exactly what the test says; every response
 * is recorded and queued for `next()`. Tracks, per type, the subscribed names, the last accepted
 * version and last nonce, so `ack`/`nack`/`subscribe` produce what a real client would send.
 */
export class AdsStream {
  readonly node: AdsNode;
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientDuplexStream<DiscoveryRequest, Received>;
  private readonly responses: ResponseQueue<Received>;
  private readonly listeners: ((r: Received) => void)[] = [];
  private readonly state = new Map<string, TypeState>();
  private readonly all: Received[] = [];
  private sentNode = false;
  private bytes = 0;
  readonly ended: Promise<StreamEnd>;

  constructor(
    addr: string,
    private readonly opts: AdsStreamOptions,
  ) {
    this.node = opts.node;
    const channelOptions: grpc.ChannelOptions = opts.separateConnection ? SIMULATED_PROXY_CHANNEL : {};
    this.client = new grpc.Client(addr, grpc.credentials.createInsecure(), channelOptions);
    const keepRaw = opts.keepRaw ?? false;
    const decode = opts.decode ?? ((buf: Buffer) => fromBinary(DiscoveryResponseSchema, buf));
    this.call = this.client.makeBidiStreamRequest<DiscoveryRequest, Received>(
      ADS_PATH,
      (req) => Buffer.from(toBinary(DiscoveryRequestSchema, req)),
      (buf) => ({
        resp: decode(buf),
        bytes: buf.length,
        at: nowMs(),
        ...(keepRaw ? { raw: Buffer.from(buf) } : {}),
      }),
    );
    this.call.on('data', (r: Received) => this.onData(r));
    this.responses = new ResponseQueue<Received>('ADS', this.call);
    this.ended = this.responses.ended;
  }

  private get endInfo(): StreamEnd | undefined {
    return this.responses.endInfo();
  }

  static open(addr: string, opts: AdsStreamOptions): AdsStream {
    return new AdsStream(addr, opts);
  }

  /** Total encoded bytes received on this stream. */
  get bytesReceived(): number {
    return this.bytes;
  }

  /** Every response received so far (consumed or not), oldest first. */
  get history(): readonly Received[] {
    return this.all;
  }

  /** Ended (status received or error)? */
  get end(): StreamEnd | undefined {
    return this.endInfo;
  }

  isOpen(): boolean {
    return this.endInfo === undefined;
  }

  /** Subscribed names, last accepted version and last nonce for a type, as this client tracks them. */
  typeState(typeUrl: string): Readonly<TypeState> {
    return this.st(typeUrl);
  }

  private st(typeUrl: string): TypeState {
    let s = this.state.get(typeUrl);
    if (!s) {
      s = { names: [], accepted: '', nonce: '' };
      this.state.set(typeUrl, s);
    }
    return s;
  }

  /** Called for every response (in addition to queueing it for next()). */
  onResponse(fn: (r: Received) => void): void {
    this.listeners.push(fn);
  }

  private onData(r: Received): void {
    this.bytes += r.bytes;
    this.st(r.resp.typeUrl).nonce = r.resp.nonce;
    for (const fn of this.listeners) fn(r);
    if (this.opts.passive) return;
    this.all.push(r);
    this.responses.deliver(r);
  }

  /**
   * Sends exactly this request (plus `node` on the first one). Its names and version become the
   * type's tracked names and last accepted version (a request's version_info is, by the protocol,
   * the version the client last accepted).
   */
  send(init: RequestInit): void {
    if (this.endInfo) throw new Error(`ADS stream already ended: ${this.endInfo.code} ${this.endInfo.details}`);
    const st = this.st(init.typeUrl);
    st.names = [...(init.resourceNames ?? [])];
    st.accepted = init.versionInfo ?? '';
    const withNode = !this.sentNode || (this.opts.nodeOnEveryRequest ?? false);
    this.sentNode = true;
    const req = create(DiscoveryRequestSchema, {
      typeUrl: init.typeUrl,
      resourceNames: [...(init.resourceNames ?? [])],
      versionInfo: init.versionInfo ?? '',
      responseNonce: init.responseNonce ?? '',
      ...(init.errorDetail ? { errorDetail: { code: init.errorDetail.code, message: init.errorDetail.message } } : {}),
      ...(withNode
        ? {
            node: {
              id: this.node.id,
              cluster: this.node.cluster ?? '',
              ...(this.node.metadata ? { metadata: this.node.metadata } : {}),
              userAgentName: 'meshpilot-raw-ads',
            },
          }
        : {}),
    });
    this.call.write(req);
  }

  /** (Re)subscribes `typeUrl` to `names`, carrying the type's last accepted version and last nonce, as clients do. */
  subscribe(typeUrl: string, names: readonly string[]): void {
    const s = this.st(typeUrl);
    this.send({ typeUrl, resourceNames: names, versionInfo: s.accepted, responseNonce: s.nonce });
  }

  /** ACKs a response: its version and nonce, the type's current names. */
  ack(resp: DiscoveryResponse): void {
    const s = this.st(resp.typeUrl);
    this.send({ typeUrl: resp.typeUrl, resourceNames: s.names, versionInfo: resp.versionInfo, responseNonce: resp.nonce });
  }

  /** NACKs a response: the last *accepted* version, the rejected nonce, and error_detail. */
  nack(resp: DiscoveryResponse, message: string, code = grpc.status.INVALID_ARGUMENT): void {
    const s = this.st(resp.typeUrl);
    this.send({
      typeUrl: resp.typeUrl,
      resourceNames: s.names,
      versionInfo: s.accepted,
      responseNonce: resp.nonce,
      errorDetail: { code, message },
    });
  }

  /** The next unconsumed response (of `typeUrl` if given), waiting up to timeoutMs (default 10 s). */
  next(typeUrl?: string, timeoutMs = 10_000): Promise<Received> {
    return this.responses.next(typeUrl, timeoutMs);
  }

  /**
   * The next response of `typeUrl` that satisfies `pred`, ACKing every one on the way (the stream
   * keeps up with pushes while it waits); `describe` builds the timeout message (e.g. with logs).
   */
  async nextMatching(
    typeUrl: string,
    pred: (r: Received) => boolean,
    opts: { timeoutMs?: number; describe: () => string },
  ): Promise<Received> {
    const deadline = Date.now() + (opts.timeoutMs ?? 15_000);
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(opts.describe());
      const r = await this.next(typeUrl, left);
      this.ack(r.resp);
      if (pred(r)) return r;
    }
  }

  /** Removes and returns every queued (unconsumed) response. */
  drain(): Received[] {
    return this.responses.drain();
  }

  /** Half-closes and cancels the stream, closes the channel. */
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
