// Owns TLS-PSK keys as Mosquitto writes them: a `psk_file` (one `identity:hexkey` per line, blank
// lines and lines starting with '#' ignored), so a Mosquitto deployment's file works unchanged,
// and one key in hex (the client database's pskKey, `mosquitto_pub --psk`). A key's bytes are
// what Mosquitto makes of the same hex (mosquitto__hex2bin: its leading "00" pairs kept as zero
// bytes, the rest read as one big number), so an odd-length key means the same on both sides.
// Parsing checks every line and throws a MosquittoFileError naming the line number.
import { MosquittoFileError } from './errors.ts';
import { colonLines } from './colon-lines.ts';

/** The identities of a PSK file and their keys. */
export type PskFile = ReadonlyMap<string, Buffer>;

/** OpenSSL 3's limits (PSK_MAX_PSK_LEN, PSK_MAX_IDENTITY_LEN): a longer key or identity could
 * never be used in a handshake; and the identities a file may hold. */
export const PSK_LIMITS = { keyBytes: 512, identityBytes: 256, identities: 100_000 } as const;

const HEX = /^[0-9A-Fa-f]+$/;

/** Parses the text of a PSK file; `source` names it in errors. */
export function parsePskFile(text: string, source = 'PSK file'): PskFile {
  const keys = new Map<string, Buffer>();
  for (const { name: identity, value, at } of colonLines(text, source, 'MOSQUITTO_PSK_INVALID', 'identity:hexkey', 'identity')) {
    if (Buffer.byteLength(identity) > PSK_LIMITS.identityBytes) throw new MosquittoFileError('MOSQUITTO_PSK_INVALID', `${at}: the identity is longer than ${PSK_LIMITS.identityBytes} bytes`);
    const hex = value.trim();
    const problem = pskKeyProblem(hex);
    if (problem !== undefined) throw new MosquittoFileError('MOSQUITTO_PSK_INVALID', `${at}: the key ${problem}`);
    if (keys.size >= PSK_LIMITS.identities) throw new MosquittoFileError('MOSQUITTO_PSK_INVALID', `${at}: more than ${PSK_LIMITS.identities} identities`);
    keys.set(identity, pskKeyBytes(hex));
  }
  return keys;
}

/** Why `hex` cannot be a key, or undefined. */
export function pskKeyProblem(hex: string): string | undefined {
  if (hex === '') return 'is empty';
  if (!HEX.test(hex)) return 'must be hexadecimal digits only (no 0x prefix)';
  if (pskKeyBytes(hex).length > PSK_LIMITS.keyBytes) return `is longer than ${PSK_LIMITS.keyBytes} bytes`;
  return undefined;
}

/** The bytes of a key in hex, as Mosquitto reads it (see the top of this file). */
export function pskKeyBytes(hex: string): Buffer {
  let zeros = 0;
  while (hex.startsWith('00', zeros * 2)) zeros++;
  let value = BigInt(`0x${hex}`).toString(16);
  if (value === '0') value = '';
  if (value.length % 2 === 1) value = `0${value}`;
  return Buffer.concat([Buffer.alloc(zeros), Buffer.from(value, 'hex')]);
}
