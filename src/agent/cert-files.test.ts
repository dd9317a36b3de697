import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { certFilePaths, writeCertFiles, writeFileAtomic } from './cert-files.js';

describe('writeCertFiles', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'agent-files-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const contents = (n: number) => ({ certChainPem: `chain ${n}\n`, privateKeyPem: `key ${n}\n`, rootCertPem: `root ${n}\n` });

  it('writes cert-chain.pem, key.pem (0600) and root-cert.pem (0644) into a new directory', async () => {
    const out = path.join(dir, 'nested', 'certs');
    const paths = await writeCertFiles(out, contents(1));
    assert.deepEqual(paths, certFilePaths(out));
    assert.equal(await readFile(paths.certChain, 'utf8'), 'chain 1\n');
    assert.equal(await readFile(paths.key, 'utf8'), 'key 1\n');
    assert.equal(await readFile(paths.rootCert, 'utf8'), 'root 1\n');
    assert.equal((await stat(paths.key)).mode & 0o777, 0o600);
    assert.equal((await stat(paths.certChain)).mode & 0o777, 0o644);
    assert.equal((await stat(paths.rootCert)).mode & 0o777, 0o644);
    assert.deepEqual((await readdir(out)).sort(), ['cert-chain.pem', 'key.pem', 'root-cert.pem']);
  });

  it('replaces the files by rename: a reader holding the old inode keeps the old content, no temp files stay', async () => {
    const out = path.join(dir, 'rotate');
    const paths = await writeCertFiles(out, contents(1));
    const before = await stat(paths.key);
    await writeCertFiles(out, contents(2));
    const afterStat = await stat(paths.key);
    assert.notEqual(afterStat.ino, before.ino, 'a new file, not an in-place rewrite');
    assert.equal(await readFile(paths.key, 'utf8'), 'key 2\n');
    assert.equal(afterStat.mode & 0o777, 0o600);
    assert.deepEqual((await readdir(out)).sort(), ['cert-chain.pem', 'key.pem', 'root-cert.pem']);
  });

  it('narrows a key file that was left world-readable', async () => {
    const out = path.join(dir, 'loose');
    await writeCertFiles(out, contents(1));
    await writeFile(certFilePaths(out).key, 'old', { mode: 0o666 });
    await writeCertFiles(out, contents(3));
    assert.equal((await stat(certFilePaths(out).key)).mode & 0o777, 0o600);
  });
});

describe('writeFileAtomic', () => {
  it('writes with the given mode and leaves no temporary file', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'agent-atomic-'));
    try {
      const file = path.join(dir, 'a', 'bootstrap.json');
      await writeFileAtomic(file, '{}\n', 0o644);
      await writeFileAtomic(file, '{"v":2}\n', 0o644);
      assert.equal(await readFile(file, 'utf8'), '{"v":2}\n');
      assert.equal((await stat(file)).mode & 0o777, 0o644);
      assert.deepEqual(await readdir(path.dirname(file)), ['bootstrap.json']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
