/**
 * `meshctl analyze`/`validate` inputs are held to the server's limits: a file over the size limit is
 * refused from its size alone (never read), and a file of many broken objects reports each one's
 * errors bounded as the server keeps them.
 */
import assert from 'node:assert/strict';
import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ERROR_BOUNDS } from '../../config/error-bounds.js';
import { DEFAULT_PARSE_LIMITS } from '../../config/parse-limits.js';
import { tempDir } from '../../../test/support/temp-dir.js';
import { loadInputs } from './loader.js';

const dir = tempDir('meshctl-loader-');
after(() => dir.remove());

const input = (args: string[]): Parameters<typeof loadInputs>[0] => ({
  args,
  recursive: false,
  defaultNamespace: 'default',
  cwd: dir.path,
  rootNamespace: 'istio-system',
});

describe('meshctl inputs under the parse limits', () => {
  it('refuses a file over the size limit by its size', async () => {
    // A sparse file: over the limit by its size; were it read, it would be 8 MiB of NUL bytes.
    await writeFile(join(dir.path, 'huge.yaml'), '');
    await truncate(join(dir.path, 'huge.yaml'), DEFAULT_PARSE_LIMITS.maxFileBytes + 1);
    const { parseErrors } = await loadInputs(input(['huge.yaml']));
    assert.deepEqual(
      parseErrors.map((e) => e.message),
      [`file is ${DEFAULT_PARSE_LIMITS.maxFileBytes + 1} bytes, larger than the limit of ${DEFAULT_PARSE_LIMITS.maxFileBytes} bytes`],
    );
  });

  it("bounds an object's errors and their length", async () => {
    const ports = Array.from({ length: 100 }, (_, i) => `{number: ${70_000 + i}, name: p${i}}`).join(', ');
    await writeFile(
      join(dir.path, 'ports.yaml'),
      `apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: "${'n'.repeat(5000)}"}\nspec: {hosts: [a.example.com], ports: [${ports}]}\n`,
    );
    const { snapshot } = await loadInputs(input(['ports.yaml']));
    const errors = snapshot.invalid.flatMap((o) => o.errors);
    assert.equal(errors.length, ERROR_BOUNDS.maxErrorsPerUnit + 1);
    assert.match(errors.at(-1)?.message ?? '', /more errors not shown/);
    for (const e of errors) assert.ok((e.name?.length ?? 0) <= ERROR_BOUNDS.maxFieldChars + 40, `a name of ${e.name?.length} characters`);
  });

  it('reads the mesh config and mesh networks files under the same limits, naming the file and line', async () => {
    // Nesting past the limit would overflow the YAML parser's stack were it parsed.
    const deep = `defaultConfig:\n${Array.from({ length: DEFAULT_PARSE_LIMITS.maxDepth + 5 }, (_, i) => `${'  '.repeat(i + 1)}k${i}:`).join('\n')} 1\n`;
    await writeFile(join(dir.path, 'deep-mesh.yaml'), deep);
    await assert.rejects(loadInputs({ ...input([]), meshConfigFile: 'deep-mesh.yaml' }), (err: Error) => {
      assert.match(err.message, new RegExp(`^deep-mesh\\.yaml:\\d+: nesting deeper than ${DEFAULT_PARSE_LIMITS.maxDepth} levels$`));
      return true;
    });
    await writeFile(
      join(dir.path, 'aliases.yaml'),
      `a: &a [x]\nnetworks: {${Array.from({ length: 150 }, (_, i) => `n${i}: *a`).join(', ')}}\n`,
    );
    await assert.rejects(loadInputs({ ...input([]), meshNetworksFile: 'aliases.yaml' }), /^MeshError: aliases\.yaml: not YAML: .*alias/i);
  });
});
