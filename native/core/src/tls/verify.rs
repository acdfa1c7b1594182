//! The optional client certificate (Node's `requestCert: true, rejectUnauthorized: false`) and
//! the subject CN of a certificate.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use x509_parser::asn1_rs::{Any, Tag};

/// Asks for a client certificate, lets a client without one in, and accepts any certificate
/// without verifying its chain. The client's handshake signature (CertificateVerify) is still
/// checked, so a client cannot present a certificate whose key it does not hold; whether the
/// chain verifies is answered after the handshake by `TlsEndpoint::verified_cn`, with `inner`.
#[derive(Debug)]
pub(super) struct AnyClientCert {
    inner: Arc<dyn ClientCertVerifier>,
}

impl AnyClientCert {
    pub(super) fn new(inner: Arc<dyn ClientCertVerifier>) -> Self {
        AnyClientCert { inner }
    }
}

impl ClientCertVerifier for AnyClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The first CN (commonName) of the subject of a DER certificate, as UTF-8 (as Node's
/// `getPeerCertificate().subject.CN`, the first one when there are several); None when the
/// certificate cannot be parsed or its subject has no CN that is a string.
pub fn subject_cn(cert: &CertificateDer<'_>) -> Option<String> {
    let (_, x509) = x509_parser::parse_x509_certificate(cert).ok()?;
    let cn = x509.subject().iter_common_name().next()?;
    directory_string(cn.attr_value())
}

/// An X.520 DirectoryString (and the other ASN.1 string types) as UTF-8, the way OpenSSL's
/// ASN1_STRING_to_UTF8 reads them: T61String as Latin-1, BMPString as UTF-16BE, UniversalString
/// as UTF-32BE.
fn directory_string(value: &Any<'_>) -> Option<String> {
    let data = value.data;
    match value.tag() {
        Tag::Utf8String | Tag::PrintableString | Tag::Ia5String | Tag::NumericString | Tag::VisibleString => {
            std::str::from_utf8(data).ok().map(str::to_owned)
        }
        Tag::T61String => Some(data.iter().map(|&b| char::from(b)).collect()),
        Tag::BmpString if data.len().is_multiple_of(2) => {
            let units = data.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]]));
            char::decode_utf16(units).collect::<Result<String, _>>().ok()
        }
        Tag::UniversalString if data.len().is_multiple_of(4) => data
            .chunks_exact(4)
            .map(|c| char::from_u32(u32::from_be_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        _ => None,
    }
}
