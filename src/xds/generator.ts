import type { PushRequest, PushContext, Proxy } from '../model/index.js';
import type { XdsResource } from './resource.js';

/** What a proxy asked for on one type. */
export interface WatchedResourceView {
  readonly typeUrl: string;
  /** Subscribed names; empty with `wildcard` = everything of this type. */
  readonly names: ReadonlySet<string>;
  readonly wildcard: boolean;
}

/** Builds the resources of one type for one proxy. Must not throw for bad config: skip and log. */
export interface Generator {
  /** Served on Delta ADS only: a SotW request for its type ends the stream with an error (ztunnel's types). */
  readonly deltaOnly?: boolean;
  generate(proxy: Proxy, watched: WatchedResourceView, push: PushContext, req: PushRequest): readonly XdsResource[];
}

/**
 * Generators by key, looked up as istiod does: `<GENERATOR metadata>/<typeUrl>`, then
 * `<proxyType>/<typeUrl>`, then `<typeUrl>`.
 */
export class GeneratorRegistry {
  private readonly generators = new Map<string, Generator>();

  register(key: string, gen: Generator): this {
    this.generators.set(key, gen);
    return this;
  }

  /** Replaces the generator under `key` with `wrap(it)`; false when there is none. */
  wrap(key: string, wrap: (g: Generator) => Generator): boolean {
    const g = this.generators.get(key);
    if (g) this.generators.set(key, wrap(g));
    return g !== undefined;
  }

  lookup(proxy: Proxy, typeUrl: string): Generator | undefined {
    const g = proxy.metadata.generator;
    return (
      (g !== undefined ? this.generators.get(`${g}/${typeUrl}`) : undefined) ??
      this.generators.get(`${proxy.type}/${typeUrl}`) ??
      this.generators.get(typeUrl)
    );
  }
}
