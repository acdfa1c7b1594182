// OCSP (RFC 6960) for the revocation feature: the request for one certificate, its POST to a
// responder, and the response checked (signed by the certificate's issuer or a responder the
// issuer delegated to with id-kp-OCSPSigning, fresh, about this certificate). The ASN.1 and the
// signatures are pkijs' (on Node's WebCrypto); this module is loaded only when an endpoint asks
// for OCSP (stapling in the main thread, client checks in a worker). Holds no state.
import { X509Certificate } from 'node:crypto';

import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

/** The certificate's status as its responder tells it. */
export type CertStatus = 'good' | 'revoked' | 'unknown';

/** A checked OCSP answer about one certificate. */
export interface OcspAnswer {
  status: CertStatus;
  /** Epoch ms. */
  thisUpdate: number;
  /** Epoch ms; absent when the responder gives none ("newer information is always available"). */
  nextUpdate?: number;
  /** Epoch ms, with status revoked. */
  revokedAt?: number;
  /** The whole DER OCSPResponse (what is stapled). */
  der: Buffer;
}

/** Why a responder gave no usable answer: its words for it (the metrics' result label). */
export type OcspFailure = 'unreachable' | 'timeout' | 'http_error' | 'bad_response' | 'not_successful';

export class OcspError extends Error {
  constructor(readonly failure: OcspFailure, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'OcspError';
  }
}

/** A responder's answer is at most this large (a response for one certificate is a few KB). */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** Clocks may differ this much: a thisUpdate this far in the future is still taken. */
const CLOCK_SKEW_MS = 5 * 60_000;

function parse(cert: X509Certificate): pkijs.Certificate {
  return pkijs.Certificate.fromBER(new Uint8Array(cert.raw));
}

/** The DER OCSPRequest for `cert` (SHA-1 CertID, as RFC 5019 responders expect; no nonce, so an
 * answer can be cached and shared). */
export async function ocspRequest(cert: X509Certificate, issuer: X509Certificate): Promise<Buffer> {
  const req = new pkijs.OCSPRequest();
  await req.createForCertificate(parse(cert), { hashAlgorithm: 'SHA-1', issuerCertificate: parse(issuer) });
  return Buffer.from(req.toSchema(true).toBER(false));
}

/** POSTs `request` to `url` (application/ocsp-request), within `timeoutMs`; answers the body. */
export async function postOcsp(url: string, request: Buffer, timeoutMs: number): Promise<Buffer> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/ocsp-request', accept: 'application/ocsp-response' },
      body: new Uint8Array(request) as Uint8Array<ArrayBuffer>,
      // A responder has no reason to redirect; not following keeps the broker's requests where the
      // certificate (or the operator) said.
      redirect: 'error',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const timedOut = (err as Error).name === 'TimeoutError';
    throw new OcspError(timedOut ? 'timeout' : 'unreachable', timedOut ? `OCSP responder ${url} did not answer within ${timeoutMs} ms` : `OCSP responder ${url}: ${causeOf(err)}`, { cause: err });
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new OcspError('http_error', `OCSP responder ${url} answered HTTP ${res.status}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body ?? []) {
      size += chunk.length;
      if (size > MAX_RESPONSE_BYTES) {
        await res.body?.cancel();
        throw new OcspError('bad_response', `OCSP responder ${url} answered more than ${MAX_RESPONSE_BYTES} bytes`);
      }
      chunks.push(Buffer.from(chunk));
    }
  } catch (err) {
    if (err instanceof OcspError) throw err;
    const timedOut = (err as Error).name === 'TimeoutError';
    throw new OcspError(timedOut ? 'timeout' : 'unreachable', `OCSP responder ${url}: ${causeOf(err)}`, { cause: err });
  }
  return Buffer.concat(chunks);
}

function causeOf(err: unknown): string {
  const e = err as Error & { cause?: Error & { code?: string } };
  return e.cause?.code ?? e.cause?.message ?? e.message;
}

const RESPONSE_STATUS = ['successful', 'malformedRequest', 'internalError', 'tryLater', '(4)', 'sigRequired', 'unauthorized'];

/**
 * Checks a DER OCSPResponse about `cert` (issued by `issuer`) at `now` (epoch ms): successful, a
 * basic response, signed by the issuer or by a responder certificate the issuer gave
 * id-kp-OCSPSigning (pkijs' BasicOCSPResponse.verify), with a SingleResponse for this certificate
 * that is current (thisUpdate not in the future, nextUpdate not past). Throws an OcspError
 * ('not_successful' or 'bad_response') otherwise.
 */
export async function checkResponse(der: Buffer, cert: X509Certificate, issuer: X509Certificate, now: number): Promise<OcspAnswer> {
  let response: pkijs.OCSPResponse;
  try {
    response = pkijs.OCSPResponse.fromBER(new Uint8Array(der));
  } catch (err) {
    throw new OcspError('bad_response', `not an OCSP response: ${(err as Error).message}`, { cause: err });
  }
  const status = response.responseStatus.valueBlock.valueDec;
  if (status !== 0) throw new OcspError('not_successful', `the responder answered ${RESPONSE_STATUS[status] ?? `status ${status}`}`);
  if (!response.responseBytes || response.responseBytes.responseType !== pkijs.id_PKIX_OCSP_Basic) {
    throw new OcspError('bad_response', 'not a basic OCSP response');
  }
  let basic: pkijs.BasicOCSPResponse;
  try {
    const asn = asn1js.fromBER(response.responseBytes.response.valueBlock.valueHexView);
    basic = new pkijs.BasicOCSPResponse({ schema: asn.result });
  } catch (err) {
    throw new OcspError('bad_response', `the basic OCSP response does not parse: ${(err as Error).message}`, { cause: err });
  }
  const certP = parse(cert);
  const issuerP = parse(issuer);
  let signed: boolean;
  try {
    signed = basic.certs && basic.certs.length > 0
      ? await basic.verify({ trustedCerts: [issuerP], issuerCerts: [issuerP] })
      // No certificate in the response: only the issuer itself can have signed it.
      : responderIsIssuer(basic, issuerP) && await pkijs.getCrypto(true).verifyWithPublicKey(basic.tbsResponseData.tbsView as Uint8Array<ArrayBuffer>, basic.signature, issuerP.subjectPublicKeyInfo, basic.signatureAlgorithm);
  } catch (err) {
    throw new OcspError('bad_response', `the response's signature does not verify: ${(err as Error).message}`, { cause: err });
  }
  if (!signed) throw new OcspError('bad_response', 'the response is not signed by the certificate\'s issuer or a responder it authorized');
  const { isForCertificate } = await basic.getCertificateStatus(certP, issuerP);
  if (!isForCertificate) throw new OcspError('bad_response', 'the response is not about this certificate');
  const single = await singleFor(basic, certP, issuerP);
  const thisUpdate = single.thisUpdate.getTime();
  const nextUpdate = single.nextUpdate?.getTime();
  if (thisUpdate > now + CLOCK_SKEW_MS) throw new OcspError('bad_response', `the response's thisUpdate ${single.thisUpdate.toISOString()} is in the future`);
  if (nextUpdate !== undefined && nextUpdate <= now) throw new OcspError('bad_response', `the response expired at ${single.nextUpdate!.toISOString()} (its nextUpdate)`);
  const tag = single.certStatus.idBlock.tagNumber;
  const answer: OcspAnswer = { status: tag === 0 ? 'good' : tag === 1 ? 'revoked' : 'unknown', thisUpdate, der };
  if (nextUpdate !== undefined) answer.nextUpdate = nextUpdate;
  if (tag === 1) {
    const revokedInfo = single.certStatus as asn1js.Constructed;
    const time = revokedInfo.valueBlock.value[0] as asn1js.GeneralizedTime | undefined;
    if (time instanceof asn1js.GeneralizedTime) answer.revokedAt = time.toDate().getTime();
  }
  return answer;
}

/** The SingleResponse whose CertID names `cert` (getCertificateStatus found one). */
async function singleFor(basic: pkijs.BasicOCSPResponse, cert: pkijs.Certificate, issuer: pkijs.Certificate): Promise<pkijs.SingleResponse> {
  for (const single of basic.tbsResponseData.responses) {
    const id = new pkijs.CertID();
    const hash = pkijs.getCrypto(true).getAlgorithmByOID(single.certID.hashAlgorithm.algorithmId, true, 'CertID.hashAlgorithm') as { name: string };
    await id.createForCertificate(cert, { hashAlgorithm: hash.name, issuerCertificate: issuer });
    if (single.certID.isEqual(id)) return single;
  }
  throw new OcspError('bad_response', 'the response is not about this certificate');
}

/** The responderID of a response without certificates names the issuer (by name or key hash). */
function responderIsIssuer(basic: pkijs.BasicOCSPResponse, issuerP: pkijs.Certificate): boolean {
  const id = basic.tbsResponseData.responderID;
  if (id instanceof pkijs.RelativeDistinguishedNames) return issuerP.subject.isEqual(id);
  // byKey: the SHA-1 of the issuer's public key, checked by the signature itself.
  return id instanceof asn1js.OctetString;
}
