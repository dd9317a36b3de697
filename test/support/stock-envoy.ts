/**
 * Upstream Envoy's node as it introduces itself (testdata/envoy/node-extensions-<version>.json,
 * read from the real binary's bootstrap node): user agent, build version and every extension it
 * was built with, with the config types each accepts — none of Istio's.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { NodeSchema } from '../../src/gen/envoy/config/core/v3/base_pb.js';
import { REPO_ROOT } from './paths.js';

interface NodeExtensionsFile {
  readonly userAgentName: string;
  readonly userAgentBuildVersion: { readonly major: number; readonly minor: number; readonly patch: number };
  readonly extensions: readonly { readonly name: string; readonly category: string; readonly typeUrls?: readonly string[] }[];
}

/** The Node fields upstream Envoy `version` fills on its first request. */
export function stockEnvoyNodeFields(
  version = '1.40.0',
): Pick<MessageInitShape<typeof NodeSchema>, 'userAgentName' | 'userAgentVersionType' | 'extensions'> {
  const f = JSON.parse(readFileSync(join(REPO_ROOT, 'testdata', 'envoy', `node-extensions-${version}.json`), 'utf8')) as NodeExtensionsFile;
  const v = f.userAgentBuildVersion;
  return {
    userAgentName: f.userAgentName,
    userAgentVersionType: {
      case: 'userAgentBuildVersion',
      value: { version: { majorNumber: v.major, minorNumber: v.minor, patch: v.patch } },
    },
    extensions: f.extensions.map((e) => ({ name: e.name, category: e.category, typeUrls: [...(e.typeUrls ?? [])] })),
  };
}
