// Signs Spindle licences with an Ed25519 private key, and makes key pairs.
//
//   node --import tsx scripts/sign-license.ts --generate-keypair DIR
//       writes DIR/license-private.pem (mode 0600) and DIR/license-public.pem
//   node --import tsx scripts/sign-license.ts --key PRIVATE.pem --licensee NAME [--type enterprise]
//       [--expires 2027-01-01T00:00:00Z] [--features a,b,c] [--max-connections N] [--issued DATE]
//       prints the licence token (import it with POST /license/import {"license": "..."})
//
// A broker verifies licences with its built-in public key, or with the PEM file that
// admin.licensePublicKey names. Keep private keys out of the repository.
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { ALL_FEATURES, LicenseError, signLicense, type LicensePayload } from '../src/admin/license.ts';

function fail(message: string): never {
  process.stderr.write(`sign-license: ${message}\n`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    'generate-keypair': { type: 'string' },
    key: { type: 'string' },
    licensee: { type: 'string' },
    type: { type: 'string', default: 'enterprise' },
    issued: { type: 'string' },
    expires: { type: 'string' },
    features: { type: 'string' },
    'max-connections': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
  strict: true,
});

if (values.help) {
  process.stdout.write(readFileSync(new URL(import.meta.url), 'utf8').split('\n').filter((l) => l.startsWith('//')).map((l) => l.slice(3)).join('\n') + '\n');
  process.exit(0);
}

if (values['generate-keypair'] !== undefined) {
  const dir = values['generate-keypair'];
  mkdirSync(dir, { recursive: true });
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const privateFile = path.join(dir, 'license-private.pem');
  const publicFile = path.join(dir, 'license-public.pem');
  writeFileSync(privateFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  writeFileSync(publicFile, publicKey.export({ type: 'spki', format: 'pem' }), { flag: 'wx' });
  process.stdout.write(`${privateFile}\n${publicFile}\n`);
  process.exit(0);
}

if (values.key === undefined) fail('--key PRIVATE.pem is required (or --generate-keypair DIR); --help for usage');
if (values.licensee === undefined) fail('--licensee NAME is required');
let privateKey;
try {
  privateKey = createPrivateKey(readFileSync(values.key, 'utf8'));
} catch (err) {
  fail(`cannot read the private key ${values.key}: ${(err as Error).message}`);
}
if (privateKey.asymmetricKeyType !== 'ed25519') fail(`${values.key} is a ${privateKey.asymmetricKeyType} key; an Ed25519 key is needed`);

let maxConnections: number | undefined;
if (values['max-connections'] !== undefined) {
  maxConnections = Number(values['max-connections']);
  if (!Number.isInteger(maxConnections) || maxConnections < 1) fail('--max-connections must be a positive integer');
}
const payload: LicensePayload = {
  licensee: values.licensee,
  type: values.type!,
  issued: values.issued ?? new Date().toISOString(),
  expires: values.expires ?? null,
  features: values.features !== undefined ? values.features.split(',').map((f) => f.trim()).filter(Boolean) : [...ALL_FEATURES],
  ...(maxConnections !== undefined ? { maxConnections } : {}),
};
try {
  process.stdout.write(`${signLicense(payload, privateKey)}\n`);
} catch (err) {
  if (err instanceof LicenseError) fail(err.message);
  throw err;
}
