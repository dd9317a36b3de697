import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { createLogger } from './log.js';
import { redactSecrets } from './redact.js';

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const pkcs8 = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const sec1 = privateKey.export({ type: 'sec1', format: 'pem' }).toString();
const jwt = 'eyJhbGciOiJFUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6Zm9vOmJhciJ9.c2lnbmF0dXJl';
const csr =
  '-----BEGIN CERTIFICATE REQUEST-----\nMIHGMG4CAQAwDDEKMAgGA1UEAxMBeDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IA\n-----END CERTIFICATE REQUEST-----\n';

describe('redactSecrets', () => {
  it('replaces PKCS#8 and SEC1 keys, CSRs and JWTs, keeping the text around them', () => {
    assert.equal(redactSecrets(`host "${pkcs8}" is invalid`), 'host "[REDACTED PRIVATE KEY]\n" is invalid');
    assert.equal(redactSecrets(`a ${sec1}b`), 'a [REDACTED PRIVATE KEY]\nb');
    assert.equal(redactSecrets(`Bearer ${jwt} refused`), 'Bearer [REDACTED JWT] refused');
    assert.equal(redactSecrets(`csr: ${csr}`), 'csr: [REDACTED CSR]\n');
  });

  it('redacts a key cut off before its END line, and leaves certificates and ordinary text alone', () => {
    assert.equal(redactSecrets(pkcs8.slice(0, 60)), '[REDACTED PRIVATE KEY]');
    const cert = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----';
    assert.equal(redactSecrets(cert), cert);
    assert.equal(redactSecrets('eyJ is just a prefix'), 'eyJ is just a prefix');
  });

  it('is applied by the logger to the message and every string field, nested ones and errors included', () => {
    const lines: string[] = [];
    const log = createLogger({ sink: (l) => lines.push(l) });
    log.warn(`refused ${jwt}`, { reason: { detail: pkcs8 }, error: new Error(`bad ${csr}`), list: [jwt] });
    assert.equal(lines.length, 1);
    for (const marker of ['BEGIN', 'eyJ']) assert.ok(!lines[0]!.includes(marker), lines[0]);
    const rec = JSON.parse(lines[0]!) as { msg: string; reason: { detail: string }; error: { message: string }; list: string[] };
    assert.deepEqual(
      [rec.msg, rec.reason.detail, rec.error.message, rec.list[0]],
      ['refused [REDACTED JWT]', '[REDACTED PRIVATE KEY]\n', 'bad [REDACTED CSR]\n', '[REDACTED JWT]'],
    );
  });
});
