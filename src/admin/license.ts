// Licences: signed tokens `base64url(JSON payload).base64url(Ed25519 signature)`, the signature
// over the first part's ASCII bytes (as in a JWT). Verified with the built-in public key below or
// the one admin.licensePublicKey names. The imported licence is kept in the store (kind
// 'license'); without one the built-in community licence applies: every feature, no expiry.
// A licence is information only: an expired or invalid one is reported, nothing is disabled.
// Owned by the main thread (the admin API).
import { createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { DomainError } from '../errors/domain-error.ts';
import type { Logger } from '../log/index.ts';
import type { Store } from '../store/types.ts';

/**
 * The Spindle licence key. Its private half is not in the repository; `scripts/sign-license.ts`
 * signs with a private key file given to it.
 */
export const BUILTIN_LICENSE_PUBLIC_KEY = `-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAeM6kFWJIBN5V8s3udxLP1T1ZG0PtzpLUjdm7aLx5a2Q=
-----END PUBLIC KEY-----
`;

/** What Spindle offers; the community licence names them all. */
export const ALL_FEATURES: readonly string[] = Object.freeze([
  'mqtt-3.1.1',
  'mqtt-5.0',
  'tls',
  'websocket',
  'shared-subscriptions',
  'persistence',
  'runtime-endpoints',
  'http-publish',
  'metrics',
  'dashboards',
  'config-import-export',
]);

export interface LicensePayload {
  licensee: string;
  type: string;
  /** ISO 8601. */
  issued: string;
  /** ISO 8601, or null for no expiry. */
  expires: string | null;
  features: string[];
  /** Informational: Spindle never refuses connections because of a licence. */
  maxConnections?: number;
}

export type LicenseStatus = 'valid' | 'expired' | 'invalid';

export interface LicenseInfo {
  type: string;
  licensee: string;
  issued: string | null;
  expires: string | null;
  features: string[];
  maxConnections?: number;
  status: LicenseStatus;
  /** Where the licence comes from: built in, or imported through the API. */
  source: 'builtin' | 'imported';
  /** Why an imported licence is not valid. */
  reason?: string;
  importTime?: string;
}

const REASON_TEXT = { format: 'bad format', signature: 'bad signature', expired: 'expired' } as const;

/** Why a token is refused: its layout or payload, its signature, or its expiry. A domain error
 * naming the `license` field (an import's 400); `detail` is the reason alone, for the info. */
export class LicenseError extends DomainError {
  constructor(readonly reason: keyof typeof REASON_TEXT, readonly detail: string, readonly payload?: LicensePayload) {
    super('INVALID_PARAMETER', `license: ${REASON_TEXT[reason]}: ${detail}`, { field: 'license' });
    this.name = 'LicenseError';
  }
}

const B64URL = /^[A-Za-z0-9_-]+$/;
const MAX_TOKEN = 64 * 1024;

function isoDate(v: unknown, field: string): string {
  if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(Date.parse(v))) {
    throw new LicenseError('format', `payload field ${field} must be an ISO 8601 date`);
  }
  return new Date(Date.parse(v)).toISOString();
}

/** Checks the payload's fields (the layout, not the signature). */
export function checkPayload(value: unknown): LicensePayload {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new LicenseError('format', 'payload is not a JSON object');
  const p = value as Record<string, unknown>;
  for (const f of ['licensee', 'type'] as const) {
    if (typeof p[f] !== 'string' || (p[f] as string).length === 0) throw new LicenseError('format', `payload field ${f} must be a non-empty string`);
  }
  const issued = isoDate(p.issued, 'issued');
  const expires = p.expires === null || p.expires === undefined ? null : isoDate(p.expires, 'expires');
  if (!Array.isArray(p.features) || !p.features.every((f) => typeof f === 'string' && f.length > 0)) {
    throw new LicenseError('format', 'payload field features must be an array of non-empty strings');
  }
  const out: LicensePayload = { licensee: p.licensee as string, type: p.type as string, issued, expires, features: [...(p.features as string[])] };
  if (p.maxConnections !== undefined && p.maxConnections !== null) {
    if (typeof p.maxConnections !== 'number' || !Number.isInteger(p.maxConnections) || p.maxConnections < 1) {
      throw new LicenseError('format', 'payload field maxConnections must be a positive integer');
    }
    out.maxConnections = p.maxConnections;
  }
  return out;
}

/** A signed licence token for `payload` (the payload is checked first). */
export function signLicense(payload: LicensePayload, privateKey: KeyObject): string {
  const checked = checkPayload(payload);
  const body = Buffer.from(JSON.stringify(checked)).toString('base64url');
  const signature = sign(null, Buffer.from(body, 'ascii'), privateKey);
  return `${body}.${signature.toString('base64url')}`;
}

/**
 * The payload of a token whose layout and signature are right. An expired licence throws
 * LicenseError('expired') carrying its payload (so it can still be shown).
 */
export function verifyLicense(token: string, publicKey: KeyObject, now = Date.now()): LicensePayload {
  if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN) throw new LicenseError('format', 'not a licence token');
  const parts = token.trim().split('.');
  if (parts.length !== 2 || !B64URL.test(parts[0]) || !B64URL.test(parts[1])) {
    throw new LicenseError('format', 'expected two base64url parts separated by "." (payload.signature)');
  }
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
  } catch {
    throw new LicenseError('format', 'payload is not base64url-encoded JSON');
  }
  const payload = checkPayload(decoded);
  const signature = Buffer.from(parts[1], 'base64url');
  if (signature.length !== 64 || !verify(null, Buffer.from(parts[0], 'ascii'), publicKey, signature)) {
    throw new LicenseError('signature', 'signature does not verify with the licence public key');
  }
  if (payload.expires !== null && Date.parse(payload.expires) <= now) {
    throw new LicenseError('expired', `expired at ${payload.expires}`, payload);
  }
  return payload;
}

/** The verification key: the PEM file `path`, or the built-in key when `path` is empty. */
export function loadLicensePublicKey(path: string): KeyObject {
  let pem = BUILTIN_LICENSE_PUBLIC_KEY;
  if (path !== '') {
    try {
      pem = readFileSync(path, 'utf8');
    } catch (err) {
      throw new Error(`admin.licensePublicKey: cannot read ${path}: ${(err as Error).message}`, { cause: err });
    }
  }
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (err) {
    throw new Error(`admin.licensePublicKey: ${path || 'built-in key'} is not a PEM public key: ${(err as Error).message}`, { cause: err });
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`admin.licensePublicKey: ${path} is a ${key.asymmetricKeyType} key; an Ed25519 key is needed`);
  return key;
}

export const COMMUNITY_LICENSE: Readonly<LicenseInfo> = Object.freeze({
  type: 'community',
  licensee: 'Spindle community',
  issued: null,
  expires: null,
  features: [...ALL_FEATURES],
  status: 'valid' as const,
  source: 'builtin' as const,
});

const KIND = 'license';
const ID = 'current';

interface StoredLicense {
  license: string;
  importTime: string;
}

/** The licence in force: the imported one (verified when read), or the community licence. */
export class Licenses {
  private current: LicenseInfo | null = null;

  constructor(private readonly store: Store, private readonly publicKey: KeyObject, private readonly log: Logger) {}

  /** The licence info, reading the store the first time. */
  async info(): Promise<LicenseInfo> {
    this.current ??= await this.load();
    // An imported licence can expire while the broker runs.
    if (this.current.status === 'valid' && this.current.expires !== null && Date.parse(this.current.expires) <= Date.now()) {
      this.current = { ...this.current, status: 'expired', reason: `expired at ${this.current.expires}` };
    }
    return this.current;
  }

  /** Verifies `token` and keeps it; throws LicenseError (and keeps the old one) when it fails. */
  async import(token: string): Promise<LicenseInfo> {
    const payload = verifyLicense(token, this.publicKey);
    const stored: StoredLicense = { license: token.trim(), importTime: new Date().toISOString() };
    await this.store.putAdmin(KIND, ID, stored);
    this.current = infoOf(payload, 'valid', stored.importTime);
    this.log.info('licence imported', { licensee: payload.licensee, type: payload.type, expires: payload.expires });
    return this.current;
  }

  /** Reads the stored licence again and verifies it (with the key in force now). */
  async refresh(): Promise<LicenseInfo> {
    this.current = await this.load();
    return this.info();
  }

  private async load(): Promise<LicenseInfo> {
    const stored = await this.store.getAdmin<StoredLicense>(KIND, ID);
    if (!stored) return { ...COMMUNITY_LICENSE, features: [...COMMUNITY_LICENSE.features] };
    try {
      return infoOf(verifyLicense(stored.license, this.publicKey), 'valid', stored.importTime);
    } catch (err) {
      if (!(err instanceof LicenseError)) throw err;
      if (err.payload) return { ...infoOf(err.payload, 'expired', stored.importTime), reason: err.detail };
      this.log.warn('stored licence does not verify', { reason: err.detail });
      return { ...unverified(stored.license), status: 'invalid', source: 'imported', reason: err.detail, importTime: stored.importTime };
    }
  }
}

function infoOf(p: LicensePayload, status: LicenseStatus, importTime: string): LicenseInfo {
  return {
    type: p.type,
    licensee: p.licensee,
    issued: p.issued,
    expires: p.expires,
    features: p.features,
    ...(p.maxConnections !== undefined ? { maxConnections: p.maxConnections } : {}),
    status,
    source: 'imported',
    importTime,
  };
}

/** What a licence that fails verification claims, shown as such (its status says it is invalid). */
function unverified(token: string): Pick<LicenseInfo, 'type' | 'licensee' | 'issued' | 'expires' | 'features'> {
  try {
    const p = checkPayload(JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString('utf8')));
    return { type: p.type, licensee: p.licensee, issued: p.issued, expires: p.expires, features: p.features };
  } catch {
    return { type: 'unknown', licensee: '', issued: null, expires: null, features: [] };
  }
}
