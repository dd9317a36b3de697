/** ReferenceGrants: which cross-namespace references a namespace allows into it. */
import { type Config, specJson, type ReferenceGrantSpec } from '../../config/index.js';
import { GATEWAY_API_GROUP } from '../../config/constants.js';

interface Grant {
  readonly namespace: string;
  readonly spec: ReferenceGrantSpec;
}

export class ReferenceGrants {
  readonly #grants: readonly Grant[];

  constructor(configs: readonly Config<'ReferenceGrant'>[]) {
    this.#grants = configs.map((c) => ({ namespace: c.meta.namespace, spec: specJson<ReferenceGrantSpec>(c.spec) }));
  }

  /** May a `fromKind` in `fromNamespace` reference the `toKind` (core group: Service, Secret) `name` in `toNamespace`? */
  allows(fromKind: string, fromNamespace: string, toNamespace: string, name: string, toKind = 'Service'): boolean {
    return this.#grants.some(
      (g) =>
        g.namespace === toNamespace &&
        g.spec.from.some((f) => f.group === GATEWAY_API_GROUP && f.kind === fromKind && f.namespace === fromNamespace) &&
        g.spec.to.some(
          (t) => (t.group === '' || t.group === 'core') && t.kind === toKind && (t.name === undefined || t.name === '' || t.name === name),
        ),
    );
  }
}
