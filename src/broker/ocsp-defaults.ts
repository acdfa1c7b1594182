// The defaults of an endpoint's OCSP settings (docs/features/tls-revocation.md), apart from the
// endpoint schema so that a worker reads them without loading the schema (TypeBox and its
// compiled checks, which a worker has no other use for).

export const OCSP_DEFAULTS = {
  refreshBefore: 3600,
  stapleTimeoutMs: 5000,
  failMode: 'closed',
  cacheSeconds: 300,
  clientTimeoutMs: 3000,
} as const;
