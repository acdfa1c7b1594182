// Owns SASLprep (RFC 4013) for SCRAM: usernames and passwords are prepared before use (RFC 5802
// section 5.1 and Normalize()). @mongodb-js/saslprep does the work; it is loaded on first use
// (about 40 ms of a start that may never see a SCRAM client).
import { lazyRequire } from '../../lazy/lazy-require.ts';

type Saslprep = (input: string, opts?: { allowUnassigned?: boolean }) => string;
const saslprep = lazyRequire<Saslprep>('@mongodb-js/saslprep');

/** A username as SCRAM compares it (unassigned code points allowed, as in a query), or undefined
 * when SASLprep refuses it (a prohibited character, bidirectional rules) or it comes out empty. */
export function prepareUsername(name: string): string | undefined {
  let prepared: string;
  try {
    prepared = saslprep()(name, { allowUnassigned: true });
  } catch {
    return undefined; // the client gets e=invalid-username-encoding
  }
  return prepared === '' ? undefined : prepared;
}

/** The password SCRAM salts: SASLprep'd; a password SASLprep refuses is used as it is (as
 * PostgreSQL does), so clients that do not prepare passwords still match. */
export function normalizePassword(password: string): string {
  try {
    return saslprep()(password, { allowUnassigned: true });
  } catch {
    return password; // prohibited characters: the raw password, documented in docs/features/scram.md
  }
}
