// What an endpoint's certificate files say about OCSP, read with node:crypto alone: the server's
// certificate and its issuer (from the `cert` chain or the `ca` file), and the responder of a
// certificate's Authority Information Access extension. Used to check an endpoint's OCSP settings
// when it is configured, and by the revocation feature (src/features/revocation). No state.
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';

/** The OCSP responder URL of a certificate's Authority Information Access extension (the first
 * http(s) one), or undefined. */
export function responderOf(cert: X509Certificate): string | undefined {
  const aia = cert.infoAccess;
  if (!aia) return undefined;
  for (const line of aia.split('\n')) {
    const m = /^OCSP - URI:(https?:\/\/\S+)$/.exec(line.trim());
    if (m) return m[1];
  }
  return undefined;
}

/** The issuer of `cert` among `candidates`: named as its issuer, and its key verifies the signature. */
export function findIssuer(cert: X509Certificate, candidates: readonly X509Certificate[]): X509Certificate | undefined {
  return candidates.find((c) => cert.checkIssued(c) && cert.verify(c.publicKey));
}

/** The certificates of PEM text, in order. */
export function pemCertificates(pem: string): X509Certificate[] {
  const out: X509Certificate[] = [];
  for (const m of pem.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)) out.push(new X509Certificate(m[0]));
  return out;
}

/** The server certificate of an endpoint and what OCSP needs of it. */
export interface ServerCertificate {
  leaf: X509Certificate;
  /** Its issuer: the next certificate of `cert`, or one of `ca`; undefined when neither has it. */
  issuer: X509Certificate | undefined;
  /** The responder to ask: the override, or the certificate's AIA one. */
  responder: string | undefined;
}

/** Reads an endpoint's server certificate (`cert`: leaf first) and finds its issuer (after it in
 * `cert`, else in `ca`). Throws when a file cannot be read or holds no certificate. */
export function readServerCertificate(cert: string, ca: string | undefined, responderUrl: string | undefined): ServerCertificate {
  const chain = pemCertificates(readFileSync(cert, 'utf8'));
  if (chain.length === 0) throw new Error(`no certificate in ${cert}`);
  const [leaf, ...rest] = chain;
  const caCerts = ca ? pemCertificates(readFileSync(ca, 'utf8')) : [];
  return { leaf, issuer: findIssuer(leaf, [...rest, ...caCerts]), responder: responderUrl ?? responderOf(leaf) };
}
