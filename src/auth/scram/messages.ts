// Owns the SCRAM messages of RFC 5802 section 7 as a server reads and writes them: the client's
// first and final messages parsed (every refusal is one of the RFC's server-error-values, sent
// back as `e=<value>`), the server's first message made. Channel binding is not offered: a client
// that requires it (gs2 flag `p=`) is refused with channel-binding-not-supported; `n` and `y`
// are accepted.
import { strictBase64 } from './credentials.ts';

/** RFC 5802 section 7, server-error-value (the ones this server sends). */
export type ScramError =
  | 'invalid-encoding'
  | 'extensions-not-supported'
  | 'invalid-proof'
  | 'channel-bindings-dont-match'
  | 'channel-binding-not-supported'
  | 'invalid-username-encoding'
  | 'other-error';

/** Largest client message read (bytes); a longer one is refused with invalid-encoding. */
export const MAX_MESSAGE_BYTES = 4096;
/** Longest client nonce read (characters). */
export const MAX_NONCE_LENGTH = 256;

export interface ClientFirst {
  /** The gs2 header, both commas included (`n,,`, `y,,`, `n,a=...,`): echoed in c= of the final. */
  readonly gs2Header: string;
  /** client-first-message-bare: part of the AuthMessage. */
  readonly bare: string;
  /** The username as sent (=2C and =3D decoded; not SASLprep'd); empty when the client sent `n=`. */
  readonly username: string;
  /** The authorization identity (`a=`), decoded, or undefined. */
  readonly authzid: string | undefined;
  readonly nonce: string;
}

export interface ClientFinal {
  /** client-final-message-without-proof: part of the AuthMessage. */
  readonly withoutProof: string;
  readonly proof: Buffer;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function text(data: Buffer | undefined): string | ScramError {
  if (data === undefined || data.length === 0 || data.length > MAX_MESSAGE_BYTES) return 'invalid-encoding';
  try {
    return utf8.decode(data);
  } catch {
    return 'invalid-encoding'; // not UTF-8 (RFC 5802: the messages are UTF-8)
  }
}

/** A saslname with `=2C` and `=3D` decoded; undefined when another `=` appears (RFC 5802 5.1). */
function decodeSaslname(s: string): string | undefined {
  if (!s.includes('=')) return s;
  if (/=(?!2C|3D)/.test(s)) return undefined;
  return s.replace(/=2C/g, ',').replace(/=3D/g, '=');
}

/** printable = %x21-2B / %x2D-7E (anything visible but a comma). */
function isPrintable(s: string): boolean {
  return /^[\x21-\x2b\x2d-\x7e]+$/.test(s);
}

export function parseClientFirst(data: Buffer | undefined): ClientFirst | ScramError {
  const msg = text(data);
  if (msg === 'invalid-encoding') return msg;
  // gs2-header = gs2-cbind-flag "," [ authzid ] ","
  if (msg.startsWith('p=')) return 'channel-binding-not-supported';
  if (!msg.startsWith('n,') && !msg.startsWith('y,')) return 'other-error';
  const second = msg.indexOf(',', 2);
  if (second < 0) return 'other-error';
  const authzField = msg.slice(2, second);
  let authzid: string | undefined;
  if (authzField !== '') {
    if (!authzField.startsWith('a=')) return 'other-error';
    authzid = decodeSaslname(authzField.slice(2));
    if (authzid === undefined || authzid === '') return 'invalid-username-encoding';
  }
  const gs2Header = msg.slice(0, second + 1);
  const bare = msg.slice(second + 1);
  const attrs = bare.split(',');
  // reserved-mext: a mandatory extension this server does not know.
  if (attrs[0].startsWith('m=')) return 'extensions-not-supported';
  if (attrs.length < 2 || !attrs[0].startsWith('n=') || !attrs[1].startsWith('r=')) return 'other-error';
  const username = decodeSaslname(attrs[0].slice(2));
  if (username === undefined) return 'invalid-username-encoding';
  const nonce = attrs[1].slice(2);
  if (nonce.length === 0 || nonce.length > MAX_NONCE_LENGTH || !isPrintable(nonce)) return 'other-error';
  // Optional extensions after the nonce are ignored (RFC 5802 section 5.1).
  return { gs2Header, bare, username, authzid, nonce };
}

/** server-first-message = nonce "," salt "," iteration-count */
export function serverFirst(nonce: string, salt: Buffer, iterations: number): string {
  return `r=${nonce},s=${salt.toString('base64')},i=${iterations}`;
}

/** The client's final message, checked against the exchange: c= must carry the gs2 header of the
 * first message (no channel binding data), r= the whole nonce; the proof must be `keyLength` bytes. */
export function parseClientFinal(data: Buffer | undefined, gs2Header: string, nonce: string, keyLength: number): ClientFinal | ScramError {
  const msg = text(data);
  if (msg === 'invalid-encoding') return msg;
  const at = msg.lastIndexOf(',p=');
  if (at < 0) return 'other-error';
  const withoutProof = msg.slice(0, at);
  const attrs = withoutProof.split(',');
  if (attrs.length < 2 || !attrs[0].startsWith('c=') || !attrs[1].startsWith('r=')) return 'other-error';
  const binding = strictBase64(attrs[0].slice(2));
  if (binding === undefined) return 'invalid-encoding';
  if (binding.toString('latin1') !== Buffer.from(gs2Header, 'utf8').toString('latin1')) return 'channel-bindings-dont-match';
  if (attrs[1].slice(2) !== nonce) return 'other-error';
  const proof = strictBase64(msg.slice(at + 3));
  if (proof === undefined) return 'invalid-encoding';
  if (proof.length !== keyLength) return 'invalid-proof';
  return { withoutProof, proof };
}
