// Owns a built-in client's credentials as the admin API sets them (main thread): a password hash
// (argon2id made here from a plain password, or a ready argon2, bcrypt or Mosquitto hash) and
// SCRAM credentials per mechanism (RFC 5803 text: salted keys, never the password), made from a
// plain password (PBKDF2 on the libuv pool) or given ready. A client needs one or the other.
import { parseMosquittoHash } from '../../auth/mosquitto/passwd-file.ts';
import { hashPassword, passwordHashProblem } from '../../auth/password.ts';
import { SCRAM_MECHANISM_NAMES, deriveScramCredentials, formatScramCredentials, parseScramCredentials, type ScramMechanism } from '../../auth/scram/credentials.ts';
import { ClientDbError } from './errors.ts';

export interface Credentials {
  passwordHash?: string;
  scram?: string[];
}

/** What a create or update body says of the credentials. */
export interface CredentialsInput {
  password?: string;
  passwordHash?: string;
  scram?: string[];
}

/** Why a stored hash cannot be verified, or undefined. */
export function storedHashProblem(hash: string): string | undefined {
  if (hash.startsWith('$7$') || hash.startsWith('$6$')) {
    const parsed = parseMosquittoHash(hash);
    return typeof parsed === 'string' ? parsed : undefined;
  }
  const problem = passwordHashProblem(hash);
  return problem === undefined ? undefined : problem.replace(', not a plain password (make one with spindle hash-password)', ', or a Mosquitto $7$/$6$ hash');
}

/** The kind of a stored hash, as the API shows it ('none': SCRAM credentials only). */
export function hashKind(hash: string | undefined): string {
  if (hash === undefined) return 'none';
  if (hash.startsWith('$argon2')) return 'argon2';
  if (hash.startsWith('$2')) return 'bcrypt';
  if (hash.startsWith('$7$')) return 'pbkdf2-sha512';
  if (hash.startsWith('$6$')) return 'sha512';
  return 'unknown';
}

/** The mechanisms of a client's SCRAM credentials, in the order of SCRAM_MECHANISM_NAMES. */
export function scramMechanisms(scram: readonly string[] | undefined): ScramMechanism[] {
  if (scram === undefined) return [];
  return SCRAM_MECHANISM_NAMES.filter((m) => scram.some((s) => s.startsWith(`${m}$`)));
}

/** Refuses SCRAM credentials that are not RFC 5803 text of a mechanism, or name one twice. */
export function checkScram(list: readonly string[], field: string): void {
  const seen = new Set<string>();
  list.forEach((text, i) => {
    const parsed = parseScramCredentials(text);
    if (typeof parsed === 'string') throw new ClientDbError(400, `${field}[${i}]`, `${field}[${i}]: ${parsed}`);
    if (seen.has(parsed.mechanism)) throw new ClientDbError(400, `${field}[${i}]`, `${field}[${i}]: a second ${parsed.mechanism} credential (one per mechanism)`);
    seen.add(parsed.mechanism);
  });
}

/** Refuses a stored client (an import, another node's) whose credentials cannot be used. */
export function checkStoredCredentials(c: Credentials, field: string): void {
  if (c.passwordHash === undefined && (c.scram === undefined || c.scram.length === 0)) throw new ClientDbError(400, `${field}.passwordHash`, `${field}.passwordHash: a client needs a password hash or SCRAM credentials`);
  if (c.passwordHash !== undefined) {
    const problem = storedHashProblem(c.passwordHash);
    if (problem !== undefined) throw new ClientDbError(400, `${field}.passwordHash`, `${field}.passwordHash: ${problem}`);
  }
  if (c.scram !== undefined) checkScram(c.scram, `${field}.scram`);
}

/**
 * The credentials a create (`old` undefined) or an update gives a client. A plain password makes
 * an argon2id hash and SCRAM credentials of every mechanism; a ready hash replaces the hash and
 * drops SCRAM credentials made from the old password unless `scram` comes with it; `scram` alone
 * replaces only those. Answers undefined when an update changes no credential.
 */
export async function credentialsOf(body: CredentialsInput, old: Credentials | undefined, iterations: number): Promise<Credentials | undefined> {
  const { password, passwordHash, scram } = body;
  if (password !== undefined && passwordHash !== undefined) throw new ClientDbError(400, 'password', 'password: give password or passwordHash, not both');
  if (password !== undefined && scram !== undefined) throw new ClientDbError(400, 'scram', 'scram: not with password (its SCRAM credentials are made from the password)');
  if (passwordHash !== undefined) {
    const problem = storedHashProblem(passwordHash);
    if (problem !== undefined) throw new ClientDbError(400, 'passwordHash', `passwordHash: ${problem}`);
  }
  if (scram !== undefined) checkScram(scram, 'scram');
  if (password !== undefined) {
    const [hash, ...made] = await Promise.all([hashPassword(password, 'argon2'), ...SCRAM_MECHANISM_NAMES.map((m) => deriveScramCredentials(password, m, iterations))]);
    return { passwordHash: hash, scram: made.map(formatScramCredentials) };
  }
  if (passwordHash === undefined && scram === undefined) {
    if (old === undefined) throw new ClientDbError(400, 'password', 'password: required (or passwordHash, or scram)');
    return undefined;
  }
  const next: Credentials = {};
  const hash = passwordHash ?? (scram !== undefined ? old?.passwordHash : undefined);
  if (hash !== undefined) next.passwordHash = hash;
  if (scram !== undefined && scram.length > 0) next.scram = scram;
  if (next.passwordHash === undefined && next.scram === undefined) throw new ClientDbError(400, 'scram', 'scram: a client needs a password hash or SCRAM credentials (this would leave it neither)');
  return next;
}
