/** The cluster connection of meshctl's cluster commands, from the shared -k/--kubeconfig and --context flags. */
import { kubeClient, loadKubeConfig, type KubeClient } from '../kube/index.js';
import { errorMessage } from '../util/errors.js';
import { CliExit, EXIT, type CliIO } from './io.js';

export interface KubeFlags {
  kubeconfig?: string;
  context?: string;
}

/** A REST client for the kubeconfig's cluster; an unloadable kubeconfig is reported and ends the command (exit 1). */
export function connectKube(flags: KubeFlags, io: CliIO): KubeClient {
  return connectKubeContext(flags, io).rest;
}

/** The client and the current context's namespace (what kubectl and istioctl use when -n is not given). */
export function connectKubeContext(flags: KubeFlags, io: CliIO): { rest: KubeClient; namespace?: string } {
  try {
    const kc = loadKubeConfig({
      ...(flags.kubeconfig !== undefined ? { kubeconfig: flags.kubeconfig } : {}),
      ...(flags.context !== undefined ? { context: flags.context } : {}),
      env: io.env,
    });
    return { rest: kubeClient(kc), ...(kc.namespace ? { namespace: kc.namespace } : {}) };
  } catch (err) {
    io.stderr.write(`Error: cannot load the kubeconfig (${flags.kubeconfig ?? 'the default kubeconfig'}): ${errorMessage(err)}\n`);
    throw new CliExit(EXIT.FAILURE);
  }
}
