/**
 * The injector's inputs as one immutable snapshot, built from the `istio-sidecar-injector`
 * ConfigMap's data (or Istio's defaults when there is none) and parsed once per change, not per
 * pod: templates are compiled when the ConfigMap changes, so a broken template is reported then
 * (and the previous good snapshot keeps serving), as istiod's watcher keeps its last config.
 */
import { errorMessage, MeshError } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { builtinInjector, parseInjectorConfig, parseInjectorValues, type InjectorConfig, type Values } from './config.js';
import { CompiledTemplates } from './render.js';

export interface InjectorSnapshot {
  readonly injector: InjectorConfig;
  readonly templates: CompiledTemplates;
  readonly values: Values;
}

export const INJECTOR_CONFIGMAP = 'istio-sidecar-injector';

/** A snapshot from ConfigMap data (keys `config` and `values`); undefined data means Istio's defaults. */
export function injectorSnapshot(
  data: Readonly<Record<string, string>> | undefined,
  origin: string,
  env: Readonly<Record<string, string | undefined>>,
): InjectorSnapshot {
  if (data === undefined) {
    const { config, values } = builtinInjector();
    return { injector: config, values, templates: new CompiledTemplates(config, env) };
  }
  const configText = data.config;
  if (configText === undefined) throw new MeshError('INVALID_ARGUMENT', `${origin}: has no "config" key`);
  const injector = parseInjectorConfig(configText, `${origin} key config`);
  // istiod needs values (it refuses to inject without them); an empty object is the chart with nothing set.
  const values = data.values === undefined ? {} : parseInjectorValues(data.values, `${origin} key values`);
  return { injector, values, templates: new CompiledTemplates(injector, env) };
}

/**
 * Holds the current snapshot. `update` swaps it in when the new data parses; a bad ConfigMap is
 * logged and the last good snapshot stays.
 */
export class InjectorSource {
  #current: InjectorSnapshot;
  readonly #env: Readonly<Record<string, string | undefined>>;
  readonly #log: Logger | undefined;

  constructor(env: Readonly<Record<string, string | undefined>>, logger?: Logger) {
    this.#env = env;
    this.#log = logger;
    this.#current = injectorSnapshot(undefined, 'builtin', env);
  }

  get(): InjectorSnapshot {
    return this.#current;
  }

  /** Returns the error message when the data was rejected. */
  update(data: Readonly<Record<string, string>> | undefined, origin: string): string | undefined {
    try {
      this.#current = injectorSnapshot(data, origin, this.#env);
      this.#log?.info(
        `inject: using ${data === undefined ? "Istio's default injection templates" : origin} (templates: ${this.#current.templates.names().join(', ')})`,
      );
      return undefined;
    } catch (err) {
      const message = errorMessage(err);
      this.#log?.error(`inject: ${message}; keeping the previous injector configuration`);
      return message;
    }
  }
}
