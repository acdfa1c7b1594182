// Owns the mapping of Node's network errors (errno codes, TLS codes) to the FailureKind a check or
// an operation reports: ENOTFOUND/EAI_AGAIN -> dns, ECONNREFUSED -> refused, ETIMEDOUT -> timeout,
// certificate and handshake errors -> tls. Looks through `cause` and AggregateError (fetch and
// happy-eyeballs connects wrap the errno error). null: not a network error of these kinds.
import type { FailureKind } from './types.ts';

const BY_CODE: Record<string, FailureKind> = {
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  EAI_NONAME: 'dns',
  ECONNREFUSED: 'refused',
  ETIMEDOUT: 'timeout',
  ESOCKETTIMEDOUT: 'timeout',
  UND_ERR_CONNECT_TIMEOUT: 'timeout',
};

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT|HOSTNAME_MISMATCH|ERR_OSSL_)/;

export function classifyNetworkError(err: unknown): FailureKind | null {
  return find(err, 0);
}

function find(err: unknown, depth: number): FailureKind | null {
  if (err === null || typeof err !== 'object' || depth > 4) return null;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    const kind = BY_CODE[code];
    if (kind) return kind;
    if (TLS_CODE.test(code)) return 'tls';
  }
  if (err instanceof AggregateError) {
    for (const e of err.errors) {
      const kind = find(e, depth + 1);
      if (kind) return kind;
    }
  }
  return find((err as { cause?: unknown }).cause, depth + 1);
}
