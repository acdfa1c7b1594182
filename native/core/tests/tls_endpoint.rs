//! TLS endpoints (spindle_core::tls): real handshakes between a rustls client and the endpoint's
//! ServerConnection, in memory (and one over loopback TCP), with certificates made here (rcgen;
//! the openssl CLI for the PKCS#1 and SEC1 key files, skipped when it is not installed).

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rcgen::{
    date_time_ymd, BasicConstraints, Certificate, CertificateParams, CertificateRevocationList,
    CertificateRevocationListParams, DistinguishedName, DnType, DnValue, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyIdMethod, KeyPair, KeyUsagePurpose, RevocationReason, RevokedCertParams, SanType, SerialNumber,
};
use rustls::client::ResolvesClientCert;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::sign::CertifiedKey;
use rustls::{
    CertificateError, ClientConfig, ClientConnection, ProtocolVersion, RootCertStore,
    ServerConnection, SignatureScheme, SupportedProtocolVersion,
};
use spindle_core::tls::{subject_cn, ClientAuth, TlsEndpoint, TlsError, TlsFile, TlsSettings};

// ---------------------------------------------------------------------------------------------
// Certificates

struct Ca {
    cert: Certificate,
    issuer: Issuer<'static, KeyPair>,
}

struct Leaf {
    cert: Certificate,
    key: KeyPair,
    /// Intermediates sent after the leaf.
    chain: Vec<CertificateDer<'static>>,
}

impl Leaf {
    fn chain_pem(&self, extra: &[&Certificate]) -> String {
        let mut pem = self.cert.pem();
        for c in extra {
            pem.push_str(&c.pem());
        }
        pem
    }

    fn der_chain(&self) -> Vec<CertificateDer<'static>> {
        let mut v = vec![self.cert.der().clone()];
        v.extend(self.chain.iter().cloned());
        v
    }

    fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.serialize_der()))
    }
}

fn ca_params(cn: &str) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, cn);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    params
}

fn new_ca(cn: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let params = ca_params(cn);
    let cert = params.self_signed(&key).unwrap();
    Ca { cert, issuer: Issuer::new(params, key) }
}

fn intermediate_ca(parent: &Ca, cn: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let params = ca_params(cn);
    let cert = params.signed_by(&key, &parent.issuer).unwrap();
    Ca { cert, issuer: Issuer::new(params, key) }
}

fn leaf(ca: &Ca, params: CertificateParams, key: KeyPair) -> Leaf {
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    Leaf { cert, key, chain: Vec::new() }
}

fn server_params() -> CertificateParams {
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params.subject_alt_names.push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    params.distinguished_name.push(DnType::CommonName, "localhost");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params
}

fn server_leaf(ca: &Ca) -> Leaf {
    leaf(ca, server_params(), KeyPair::generate().unwrap())
}

fn client_params(cn: &str) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params
}

fn client_leaf(ca: &Ca, cn: &str) -> Leaf {
    leaf(ca, client_params(cn), KeyPair::generate().unwrap())
}

// ---------------------------------------------------------------------------------------------
// Files

static DIRS: AtomicUsize = AtomicUsize::new(0);

/// A directory of its own under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let n = DIRS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("spindle-tls-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A CA, a server certificate it signed, and the files of an endpoint using them.
struct Pki {
    dir: TempDir,
    ca: Ca,
    server: Leaf,
}

impl Pki {
    fn new() -> Pki {
        let dir = TempDir::new();
        let ca = new_ca("Spindle Test CA");
        let server = server_leaf(&ca);
        dir.write("server.pem", server.cert.pem());
        dir.write("server.key", server.key.serialize_pem());
        dir.write("ca.pem", ca.cert.pem());
        Pki { dir, ca, server }
    }

    fn settings(&self, request_cert: bool, reject_unauthorized: bool) -> TlsSettings {
        TlsSettings {
            cert: self.dir.path("server.pem"),
            key: self.dir.path("server.key"),
            ca: Some(self.dir.path("ca.pem")),
            request_cert,
            reject_unauthorized,
            crl: None,
        }
    }

    fn endpoint(&self, request_cert: bool, reject_unauthorized: bool) -> TlsEndpoint {
        TlsEndpoint::load(&self.settings(request_cert, reject_unauthorized)).unwrap()
    }
}

// ---------------------------------------------------------------------------------------------
// Handshakes

const TLS13_12: &[&SupportedProtocolVersion] = &[&rustls::version::TLS13, &rustls::version::TLS12];
const TLS12: &[&SupportedProtocolVersion] = &[&rustls::version::TLS12];

fn client_config(
    roots: &[&Certificate],
    client_cert: Option<&Leaf>,
    versions: &[&'static SupportedProtocolVersion],
) -> Arc<ClientConfig> {
    let mut store = RootCertStore::empty();
    for r in roots {
        store.add(r.der().clone()).unwrap();
    }
    let builder = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(store);
    let config = match client_cert {
        Some(leaf) => builder.with_client_auth_cert(leaf.der_chain(), leaf.key_der()).unwrap(),
        None => builder.with_no_client_auth(),
    };
    Arc::new(config)
}

fn client(config: Arc<ClientConfig>) -> ClientConnection {
    ClientConnection::new(config, ServerName::try_from("localhost").unwrap()).unwrap()
}

trait Side {
    fn wants_write(&self) -> bool;
    fn write_tls(&mut self, wr: &mut dyn Write) -> io::Result<usize>;
    fn read_tls(&mut self, rd: &mut dyn Read) -> io::Result<usize>;
    fn process(&mut self) -> Result<(), rustls::Error>;
}

macro_rules! side {
    ($t:ty) => {
        impl Side for $t {
            fn wants_write(&self) -> bool {
                (**self).wants_write()
            }
            fn write_tls(&mut self, wr: &mut dyn Write) -> io::Result<usize> {
                (**self).write_tls(wr)
            }
            fn read_tls(&mut self, rd: &mut dyn Read) -> io::Result<usize> {
                (**self).read_tls(rd)
            }
            fn process(&mut self) -> Result<(), rustls::Error> {
                self.process_new_packets().map(|_| ())
            }
        }
    };
}
side!(ClientConnection);
side!(ServerConnection);

/// Moves what `from` has to send to `to`; false when there was nothing.
fn transfer(from: &mut dyn Side, to: &mut dyn Side, to_error: &mut Option<rustls::Error>) -> bool {
    let mut buf = Vec::new();
    while from.wants_write() {
        if from.write_tls(&mut buf).unwrap() == 0 {
            break;
        }
    }
    if buf.is_empty() {
        return false;
    }
    if to_error.is_some() {
        return true;
    }
    let mut rd = &buf[..];
    while !rd.is_empty() {
        match to.read_tls(&mut rd) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if let Err(e) = to.process() {
            *to_error = Some(e);
            break;
        }
    }
    true
}

#[derive(Debug)]
struct Outcome {
    client_error: Option<rustls::Error>,
    server_error: Option<rustls::Error>,
}

impl Outcome {
    fn ok(&self) -> bool {
        self.client_error.is_none() && self.server_error.is_none()
    }
}

/// Runs the handshake (and whatever follows) until neither side has anything to send.
fn pump(client: &mut ClientConnection, server: &mut ServerConnection) -> Outcome {
    let mut out = Outcome { client_error: None, server_error: None };
    for _ in 0..100 {
        let a = transfer(client, server, &mut out.server_error);
        let b = transfer(server, client, &mut out.client_error);
        if !a && !b {
            return out;
        }
    }
    panic!("the handshake did not settle");
}

/// A handshake, then a message each way to show the connection carries data.
fn connect(endpoint: &TlsEndpoint, config: Arc<ClientConfig>) -> (ClientConnection, ServerConnection, Outcome) {
    let mut c = client(config);
    let mut s = endpoint.new_connection().unwrap();
    let out = pump(&mut c, &mut s);
    if out.ok() {
        assert!(!c.is_handshaking() && !s.is_handshaking());
        exchange(&mut c, &mut s);
    }
    (c, s, out)
}

fn exchange(c: &mut ClientConnection, s: &mut ServerConnection) {
    c.writer().write_all(b"CONNECT").unwrap();
    let out = pump(c, s);
    assert!(out.ok(), "{out:?}");
    let mut got = [0u8; 7];
    s.reader().read_exact(&mut got).unwrap();
    assert_eq!(&got, b"CONNECT");
    s.writer().write_all(b"CONNACK").unwrap();
    let out = pump(c, s);
    assert!(out.ok(), "{out:?}");
    c.reader().read_exact(&mut got).unwrap();
    assert_eq!(&got, b"CONNACK");
}

fn assert_refused(out: &Outcome, expected: impl Fn(&rustls::Error) -> bool) {
    let server_error = out.server_error.as_ref().expect("the server refused the client");
    assert!(expected(server_error), "server error: {server_error:?}");
    // The client is told: an alert arrives.
    assert!(
        matches!(out.client_error, Some(rustls::Error::AlertReceived(_))),
        "client error: {:?}",
        out.client_error
    );
}

fn unknown_issuer(e: &rustls::Error) -> bool {
    matches!(e, rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer))
}

// ---------------------------------------------------------------------------------------------
// Server authentication

#[test]
fn server_auth_without_client_certificates() {
    let pki = Pki::new();
    let ep = pki.endpoint(false, true);
    assert_eq!(ep.client_auth(), ClientAuth::Off);

    let (c, s, out) = connect(&ep, client_config(&[&pki.ca.cert], None, TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(c.protocol_version(), Some(ProtocolVersion::TLSv1_3));
    assert_eq!(c.peer_certificates().unwrap()[0], *pki.server.cert.der());
    assert_eq!(s.alpn_protocol(), None);
    assert!(s.peer_certificates().is_none());
    assert_eq!(ep.verified_cn(&s), None);

    // A client that has a certificate is not asked for it (reject_unauthorized does not matter
    // without request_cert, as in Node).
    let good = client_leaf(&pki.ca, "device-1");
    for reject in [true, false] {
        let ep = pki.endpoint(false, reject);
        let (_c, s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&good), TLS13_12));
        assert!(out.ok(), "{out:?}");
        assert!(s.peer_certificates().is_none());
        assert_eq!(ep.verified_cn(&s), None);
    }
}

#[test]
fn a_client_that_does_not_trust_the_server_refuses_it() {
    let pki = Pki::new();
    let other = new_ca("Other CA");
    let (_c, _s, out) = connect(&pki.endpoint(false, true), client_config(&[&other.cert], None, TLS13_12));
    assert!(matches!(out.client_error, Some(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer))), "{out:?}");
}

#[test]
fn tls12_handshake() {
    let pki = Pki::new();
    let good = client_leaf(&pki.ca, "device-12");
    let other = new_ca("Other CA");
    let stranger = client_leaf(&other, "stranger");

    let (c, s, out) = connect(&pki.endpoint(false, true), client_config(&[&pki.ca.cert], None, TLS12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(c.protocol_version(), Some(ProtocolVersion::TLSv1_2));
    assert_eq!(s.protocol_version(), Some(ProtocolVersion::TLSv1_2));

    let required = pki.endpoint(true, true);
    let (_c, s, out) = connect(&required, client_config(&[&pki.ca.cert], Some(&good), TLS12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(s.protocol_version(), Some(ProtocolVersion::TLSv1_2));
    assert_eq!(required.verified_cn(&s).as_deref(), Some("device-12"));
    let (_c, _s, out) = connect(&required, client_config(&[&pki.ca.cert], Some(&stranger), TLS12));
    assert_refused(&out, unknown_issuer);
    let (_c, _s, out) = connect(&required, client_config(&[&pki.ca.cert], None, TLS12));
    assert!(out.server_error.is_some(), "{out:?}");

    let optional = pki.endpoint(true, false);
    let (_c, s, out) = connect(&optional, client_config(&[&pki.ca.cert], Some(&stranger), TLS12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(optional.verified_cn(&s), None);
    let (_c, s, out) = connect(&optional, client_config(&[&pki.ca.cert], Some(&good), TLS12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(optional.verified_cn(&s).as_deref(), Some("device-12"));
}

// ---------------------------------------------------------------------------------------------
// Client certificates: required

#[test]
fn required_client_certificate() {
    let pki = Pki::new();
    let ep = pki.endpoint(true, true);
    assert_eq!(ep.client_auth(), ClientAuth::Required);
    let good = client_leaf(&pki.ca, "device-1");

    // A certificate signed by the CA: in, with its CN.
    let (_c, s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&good), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(s.peer_certificates().unwrap()[0], *good.cert.der());
    assert_eq!(ep.verified_cn(&s).as_deref(), Some("device-1"));

    // No certificate: refused.
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], None, TLS13_12));
    assert_refused(&out, |e| matches!(e, rustls::Error::NoCertificatesPresented));

    // A certificate of another CA: refused.
    let other = new_ca("Other CA");
    let stranger = client_leaf(&other, "stranger");
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&stranger), TLS13_12));
    assert_refused(&out, unknown_issuer);

    // A self-signed certificate with the CA's name is not the CA.
    let impostor_key = KeyPair::generate().unwrap();
    let impostor = ca_params("Spindle Test CA").self_signed(&impostor_key).unwrap();
    let forged = leaf(&Ca { cert: impostor, issuer: Issuer::new(ca_params("Spindle Test CA"), impostor_key) }, client_params("forged"), KeyPair::generate().unwrap());
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&forged), TLS13_12));
    assert!(out.server_error.is_some(), "{out:?}");
}

#[test]
fn required_client_certificate_through_an_intermediate() {
    let pki = Pki::new();
    let ep = pki.endpoint(true, true);
    let sub = intermediate_ca(&pki.ca, "Spindle Devices CA");
    let mut device = client_leaf(&sub, "device-7");

    // Without the intermediate the chain does not reach the CA.
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&device), TLS13_12));
    assert_refused(&out, unknown_issuer);

    device.chain.push(sub.cert.der().clone());
    let (_c, s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&device), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(ep.verified_cn(&s).as_deref(), Some("device-7"));

    // The optional mode verifies the same chain after the handshake.
    let optional = pki.endpoint(true, false);
    let (_c, s, out) = connect(&optional, client_config(&[&pki.ca.cert], Some(&device), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(optional.verified_cn(&s).as_deref(), Some("device-7"));
}

#[test]
fn client_certificate_purpose_and_validity() {
    let pki = Pki::new();
    let required = pki.endpoint(true, true);
    let optional = pki.endpoint(true, false);

    // No extended key usage at all: any purpose, accepted (as OpenSSL does).
    let mut params = client_params("no-eku");
    params.extended_key_usages.clear();
    let no_eku = leaf(&pki.ca, params, KeyPair::generate().unwrap());
    let (_c, s, out) = connect(&required, client_config(&[&pki.ca.cert], Some(&no_eku), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(required.verified_cn(&s).as_deref(), Some("no-eku"));

    // An extended key usage without clientAuth: refused (as OpenSSL's ssl_client purpose does).
    let mut params = client_params("server-only");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_only = leaf(&pki.ca, params, KeyPair::generate().unwrap());
    let (_c, _s, out) = connect(&required, client_config(&[&pki.ca.cert], Some(&server_only), TLS13_12));
    assert!(out.server_error.is_some(), "{out:?}");
    let (_c, s, out) = connect(&optional, client_config(&[&pki.ca.cert], Some(&server_only), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(optional.verified_cn(&s), None);

    // Expired: refused when required; accepted but not verified when optional.
    let mut params = client_params("expired");
    params.not_before = date_time_ymd(2019, 1, 1);
    params.not_after = date_time_ymd(2020, 1, 1);
    let expired = leaf(&pki.ca, params, KeyPair::generate().unwrap());
    let (_c, _s, out) = connect(&required, client_config(&[&pki.ca.cert], Some(&expired), TLS13_12));
    assert_refused(&out, |e| matches!(e, rustls::Error::InvalidCertificate(CertificateError::ExpiredContext { .. } | CertificateError::Expired)));
    let (_c, s, out) = connect(&optional, client_config(&[&pki.ca.cert], Some(&expired), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(optional.verified_cn(&s), None);
}

#[test]
fn required_client_certificate_against_the_system_roots() {
    let pki = Pki::new();
    let settings = TlsSettings { ca: None, ..pki.settings(true, true) };
    let ep = match TlsEndpoint::load(&settings) {
        Ok(ep) => ep,
        Err(TlsError::SystemRoots { detail }) => {
            eprintln!("skipped: no system roots on this machine ({detail})");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    // Our test CA is not a system root.
    let good = client_leaf(&pki.ca, "device-1");
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&good), TLS13_12));
    assert_refused(&out, unknown_issuer);
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], None, TLS13_12));
    assert_refused(&out, |e| matches!(e, rustls::Error::NoCertificatesPresented));

    // Optional: asked, accepted, not verified.
    let optional = TlsEndpoint::load(&TlsSettings { ca: None, ..pki.settings(true, false) }).unwrap();
    let (_c, s, out) = connect(&optional, client_config(&[&pki.ca.cert], Some(&good), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert!(s.peer_certificates().is_some());
    assert_eq!(optional.verified_cn(&s), None);
}

/// A client certificate resolver that records the acceptable issuers the server named.
#[derive(Debug)]
struct RecordHints {
    key: Arc<CertifiedKey>,
    hints: Mutex<Option<Vec<Vec<u8>>>>,
}

impl ResolvesClientCert for RecordHints {
    fn resolve(&self, hints: &[&[u8]], _schemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        *self.hints.lock().unwrap() = Some(hints.iter().map(|h| h.to_vec()).collect());
        Some(self.key.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

fn hints_sent(ep: &TlsEndpoint, ca: &Ca, leaf: &Leaf) -> Vec<Vec<u8>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = CertifiedKey::from_der(leaf.der_chain(), leaf.key_der(), &provider).unwrap();
    let resolver = Arc::new(RecordHints { key: Arc::new(key), hints: Mutex::new(None) });
    let mut store = RootCertStore::empty();
    store.add(ca.cert.der().clone()).unwrap();
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(TLS13_12)
        .unwrap()
        .with_root_certificates(store)
        .with_client_cert_resolver(resolver.clone());
    let (_c, _s, _out) = connect(ep, Arc::new(config));
    let hints = resolver.hints.lock().unwrap().take();
    hints.expect("the server asked for a certificate")
}

#[test]
fn acceptable_issuers_named_like_node() {
    let pki = Pki::new();
    let good = client_leaf(&pki.ca, "device-1");
    // With `ca`: its subjects (Node adds each CA certificate with SSL_CTX_add_client_CA).
    for reject in [true, false] {
        let hints = hints_sent(&pki.endpoint(true, reject), &pki.ca, &good);
        assert_eq!(hints.len(), 1);
        let ca = subject_der(pki.ca.cert.der());
        assert!(hints[0].ends_with(&ca) || ca.ends_with(&hints[0]), "hint {:02x?}", hints[0]);
    }
    // With the system roots: none (Node does not name its default roots either).
    if let Ok(ep) = TlsEndpoint::load(&TlsSettings { ca: None, ..pki.settings(true, false) }) {
        assert!(hints_sent(&ep, &pki.ca, &good).is_empty());
    }
}

/// The DER of a certificate's subject Name.
fn subject_der(cert: &CertificateDer<'_>) -> Vec<u8> {
    let (_, x509) = x509_parser::parse_x509_certificate(cert).unwrap();
    x509.subject().as_raw().to_vec()
}

// ---------------------------------------------------------------------------------------------
// Client certificates: optional

#[test]
fn optional_client_certificate() {
    let pki = Pki::new();
    let ep = pki.endpoint(true, false);
    assert_eq!(ep.client_auth(), ClientAuth::Optional);

    // Another CA's certificate: in, unverified.
    let other = new_ca("Other CA");
    let stranger = client_leaf(&other, "stranger");
    let (_c, s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&stranger), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(s.peer_certificates().unwrap()[0], *stranger.cert.der());
    assert_eq!(ep.verified_cn(&s), None);

    // A self-signed certificate: in, unverified.
    let self_key = KeyPair::generate().unwrap();
    let self_signed = Leaf { cert: client_params("myself").self_signed(&self_key).unwrap(), key: self_key, chain: Vec::new() };
    let (_c, s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&self_signed), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(ep.verified_cn(&s), None);

    // The CA's certificate: in, verified, CN reported.
    let good = client_leaf(&pki.ca, "device-1");
    let (_c, s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&good), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(ep.verified_cn(&s).as_deref(), Some("device-1"));

    // No certificate: in, no CN.
    let (_c, s, out) = connect(&ep, client_config(&[&pki.ca.cert], None, TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert!(s.peer_certificates().is_none());
    assert_eq!(ep.verified_cn(&s), None);

    // The CN is not reported while the handshake runs.
    let mut c = client(client_config(&[&pki.ca.cert], Some(&good), TLS13_12));
    let mut s = ep.new_connection().unwrap();
    let mut none = None;
    transfer(&mut c, &mut s, &mut none);
    assert!(s.is_handshaking());
    assert_eq!(ep.verified_cn(&s), None);
}

#[test]
fn optional_client_certificate_still_needs_its_key() {
    // A client presenting someone else's certificate without its key fails the handshake
    // signature check even when the certificate itself is not verified.
    let pki = Pki::new();
    let ep = pki.endpoint(true, false);
    let good = client_leaf(&pki.ca, "device-1");
    let thief_key = KeyPair::generate().unwrap();
    let stolen = Leaf { cert: good.cert, key: thief_key, chain: Vec::new() };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // rustls' client refuses a mismatched pair itself; build the CertifiedKey unchecked.
    let signing_key = provider.key_provider.load_private_key(stolen.key_der()).unwrap();
    let key = CertifiedKey::new(stolen.der_chain(), signing_key);
    let resolver = Arc::new(RecordHints { key: Arc::new(key), hints: Mutex::new(None) });
    let mut store = RootCertStore::empty();
    store.add(pki.ca.cert.der().clone()).unwrap();
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(TLS13_12)
        .unwrap()
        .with_root_certificates(store)
        .with_client_cert_resolver(resolver);
    let (_c, _s, out) = connect(&ep, Arc::new(config));
    assert_refused(&out, |e| matches!(e, rustls::Error::InvalidCertificate(CertificateError::BadSignature)));
}

// ---------------------------------------------------------------------------------------------
// Reload

#[test]
fn reload_gives_new_connections_the_new_certificate() {
    let pki = Pki::new();
    let settings = pki.settings(true, true);
    let first = TlsEndpoint::load(&settings).unwrap();
    let device = client_leaf(&pki.ca, "device-1");
    let before_reload = first.new_connection().unwrap();

    // New files: a new CA, a server certificate of it, a new key.
    let ca2 = new_ca("Spindle Test CA 2");
    let server2 = server_leaf(&ca2);
    pki.dir.write("server.pem", server2.cert.pem());
    pki.dir.write("server.key", server2.key.serialize_pem());
    pki.dir.write("ca.pem", ca2.cert.pem());
    let second = TlsEndpoint::load(&settings).unwrap();
    assert!(!Arc::ptr_eq(first.config(), second.config()));

    // New connections: the new certificate, the new CA for clients.
    let device2 = client_leaf(&ca2, "device-2");
    let (c, s, out) = connect(&second, client_config(&[&ca2.cert], Some(&device2), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(c.peer_certificates().unwrap()[0], *server2.cert.der());
    assert_eq!(second.verified_cn(&s).as_deref(), Some("device-2"));
    let (_c, _s, out) = connect(&second, client_config(&[&ca2.cert], Some(&device), TLS13_12));
    assert_refused(&out, unknown_issuer);

    // The connection made before the reload keeps the old certificate and CA.
    let mut c = client(client_config(&[&pki.ca.cert], Some(&device), TLS13_12));
    let mut s = before_reload;
    let out = pump(&mut c, &mut s);
    assert!(out.ok(), "{out:?}");
    assert_eq!(c.peer_certificates().unwrap()[0], *pki.server.cert.der());
    assert_eq!(first.verified_cn(&s).as_deref(), Some("device-1"));
}

#[test]
fn a_failed_reload_leaves_nothing_half_loaded() {
    let pki = Pki::new();
    let settings = pki.settings(false, true);
    let ep = TlsEndpoint::load(&settings).unwrap();
    // A new certificate without its key yet (files copied one at a time): the load fails and
    // the endpoint in use is untouched.
    let server2 = server_leaf(&pki.ca);
    pki.dir.write("server.pem", server2.cert.pem());
    let err = TlsEndpoint::load(&settings).unwrap_err();
    assert!(matches!(err, TlsError::KeyMismatch { .. }), "{err}");
    let (c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], None, TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(c.peer_certificates().unwrap()[0], *pki.server.cert.der());
}

// ---------------------------------------------------------------------------------------------
// Files and errors

fn load_err(settings: &TlsSettings) -> TlsError {
    match TlsEndpoint::load(settings) {
        Ok(_) => panic!("loaded"),
        Err(e) => e,
    }
}

fn assert_names(err: &TlsError, path: &Path, words: &str) {
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains(words), "{text}");
    assert_eq!(err.path(), Some(path), "{text}");
}

#[test]
fn endpoints_go_to_other_threads() {
    fn send_sync<T: Send + Sync + 'static>() {}
    send_sync::<TlsEndpoint>();
    send_sync::<TlsError>();
    fn send<T: Send>() {}
    send::<ServerConnection>();
}

#[test]
fn missing_files_are_named() {
    let pki = Pki::new();
    let missing = pki.dir.path("nope.pem");

    let err = load_err(&TlsSettings { cert: missing.clone(), ..pki.settings(false, true) });
    assert!(matches!(err, TlsError::Read { file: TlsFile::Cert, .. }), "{err:?}");
    assert_names(&err, &missing, "TLS certificate file");
    assert!(err.to_string().contains("No such file"), "{err}");

    let err = load_err(&TlsSettings { key: missing.clone(), ..pki.settings(false, true) });
    assert!(matches!(err, TlsError::Read { file: TlsFile::Key, .. }), "{err:?}");
    assert_names(&err, &missing, "TLS private key file");

    let err = load_err(&TlsSettings { ca: Some(missing.clone()), ..pki.settings(true, true) });
    assert!(matches!(err, TlsError::Read { file: TlsFile::Ca, .. }), "{err:?}");
    assert_names(&err, &missing, "TLS CA file");

    // The CA file is read when it is set, whether or not certificates are requested (Spindle
    // reads it for Node in both cases).
    let err = load_err(&TlsSettings { ca: Some(missing.clone()), ..pki.settings(false, true) });
    assert_names(&err, &missing, "TLS CA file");

    // A directory is not a file.
    let err = load_err(&TlsSettings { cert: pki.dir.0.clone(), ..pki.settings(false, true) });
    assert_names(&err, &pki.dir.0, "cannot read");
}

#[test]
fn bad_files_are_named() {
    let pki = Pki::new();
    let base = pki.settings(true, true);
    let key_pem = pki.server.key.serialize_pem();

    // A certificate file without a certificate (a key in it).
    let cert_is_key = pki.dir.write("cert-is-key.pem", &key_pem);
    let err = load_err(&TlsSettings { cert: cert_is_key.clone(), ..base.clone() });
    assert!(matches!(err, TlsError::NoCertificate { file: TlsFile::Cert, .. }), "{err:?}");
    assert_names(&err, &cert_is_key, "no certificate");

    // An empty certificate file, a DER file.
    let empty = pki.dir.write("empty.pem", "");
    assert_names(&load_err(&TlsSettings { cert: empty.clone(), ..base.clone() }), &empty, "no certificate");
    let der = pki.dir.write("cert.der", pki.server.cert.der());
    assert_names(&load_err(&TlsSettings { cert: der.clone(), ..base.clone() }), &der, "no certificate");

    // A certificate section that is not a certificate.
    let junk_cert = pki.dir.write("junk-cert.pem", "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n");
    let err = load_err(&TlsSettings { cert: junk_cert.clone(), ..base.clone() });
    assert!(matches!(err, TlsError::BadCertificate { file: TlsFile::Cert, index: 0, .. }), "{err:?}");
    assert_names(&err, &junk_cert, "certificate #1 cannot be used");

    // A PEM section without its end.
    let cut = pki.server.cert.pem();
    let cut = pki.dir.write("cut.pem", &cut[..cut.len() / 2]);
    let err = load_err(&TlsSettings { cert: cut.clone(), ..base.clone() });
    assert!(matches!(err, TlsError::Pem { file: TlsFile::Cert, .. }), "{err:?}");
    assert_names(&err, &cut, "not valid PEM");

    // A key file without a key (a certificate in it).
    let key_is_cert = pki.dir.write("key-is-cert.pem", pki.server.cert.pem());
    let err = load_err(&TlsSettings { key: key_is_cert.clone(), ..base.clone() });
    assert!(matches!(err, TlsError::NoKey { .. }), "{err:?}");
    assert_names(&err, &key_is_cert, "no private key");

    // A key section that is not a key.
    let junk_key = pki.dir.write("junk.key", "-----BEGIN PRIVATE KEY-----\naGVsbG8gd29ybGQ=\n-----END PRIVATE KEY-----\n");
    let err = load_err(&TlsSettings { key: junk_key.clone(), ..base.clone() });
    assert!(matches!(err, TlsError::UnsupportedKey { .. }), "{err:?}");
    assert_names(&err, &junk_key, "unsupported key");

    // An encrypted key.
    let encrypted = pki.dir.write("enc.key", "-----BEGIN ENCRYPTED PRIVATE KEY-----\naGVsbG8gd29ybGQ=\n-----END ENCRYPTED PRIVATE KEY-----\n");
    let err = load_err(&TlsSettings { key: encrypted.clone(), ..base.clone() });
    assert!(matches!(err, TlsError::UnsupportedKey { .. }), "{err:?}");
    assert_names(&err, &encrypted, "encrypted");

    // A key of another kind.
    let dsa = pki.dir.write("dsa.key", "-----BEGIN DSA PRIVATE KEY-----\naGVsbG8gd29ybGQ=\n-----END DSA PRIVATE KEY-----\n");
    assert_names(&load_err(&TlsSettings { key: dsa.clone(), ..base.clone() }), &dsa, "DSA PRIVATE KEY");

    // A key that is not the certificate's.
    let other_key = pki.dir.write("other.key", KeyPair::generate().unwrap().serialize_pem());
    let err = load_err(&TlsSettings { key: other_key.clone(), ..base.clone() });
    assert!(matches!(err, TlsError::KeyMismatch { .. }), "{err:?}");
    assert_names(&err, &other_key, "does not match the certificate");
    assert!(err.to_string().contains(&base.cert.display().to_string()), "{err}");

    // A CA file without a certificate, or with one that cannot be a trust anchor.
    let ca_is_key = pki.dir.write("ca-is-key.pem", &key_pem);
    let err = load_err(&TlsSettings { ca: Some(ca_is_key.clone()), ..base.clone() });
    assert!(matches!(err, TlsError::NoCertificate { file: TlsFile::Ca, .. }), "{err:?}");
    assert_names(&err, &ca_is_key, "TLS CA file");
    let bad_ca = pki.dir.write("bad-ca.pem", format!("{}-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n", pki.ca.cert.pem()));
    let err = load_err(&TlsSettings { ca: Some(bad_ca.clone()), ..base.clone() });
    assert!(matches!(err, TlsError::BadCertificate { file: TlsFile::Ca, index: 1, .. }), "{err:?}");
    assert_names(&err, &bad_ca, "certificate #2");
}

#[test]
fn pem_files_as_people_have_them() {
    let pki = Pki::new();
    // A chain file with the intermediate after the leaf, a comment before it, CRLF line ends,
    // and the key in the same file.
    let sub = intermediate_ca(&pki.ca, "Spindle Servers CA");
    let server = server_leaf(&sub);
    let text = format!("Server chain\r\n{}{}", server.chain_pem(&[&sub.cert]), server.key.serialize_pem()).replace('\n', "\r\n");
    let both = pki.dir.write("both.pem", text);
    let ep = TlsEndpoint::load(&TlsSettings { cert: both.clone(), key: both.clone(), ..pki.settings(false, true) }).unwrap();
    let (c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], None, TLS13_12));
    assert!(out.ok(), "{out:?}");
    let sent = c.peer_certificates().unwrap();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1], *sub.cert.der());

    // A `cert` file with the leaf only: completed from `ca` as OpenSSL does (Node 20 sends leaf,
    // intermediate, root with ca = intermediate + root; leaf, intermediate with ca = the
    // intermediate; the leaf alone when `ca` has no issuer of it). A chain file is sent as given.
    let leaf_only = pki.dir.write("leaf-only.pem", server.cert.pem());
    let leaf_key = pki.dir.write("leaf-only.key", server.key.serialize_pem());
    let inter_and_root = pki.dir.write("inter-root.pem", format!("{}{}", pki.ca.cert.pem(), sub.cert.pem()));
    let inter = pki.dir.write("inter.pem", sub.cert.pem());
    let root = pki.dir.path("ca.pem");
    for (cert, ca, sent) in [
        (&leaf_only, &inter_and_root, vec![server.cert.der(), sub.cert.der(), pki.ca.cert.der()]),
        (&leaf_only, &inter, vec![server.cert.der(), sub.cert.der()]),
        (&leaf_only, &root, vec![server.cert.der()]),
        (&pki.dir.path("server.pem"), &root, vec![pki.server.cert.der(), pki.ca.cert.der()]),
        (&both, &inter_and_root, vec![server.cert.der(), sub.cert.der()]),
    ] {
        let key = if cert == &leaf_only { leaf_key.clone() } else if cert == &both { both.clone() } else { pki.dir.path("server.key") };
        let ep = TlsEndpoint::load(&TlsSettings { cert: cert.clone(), key, ca: Some(ca.clone()), request_cert: false, reject_unauthorized: true, crl: None }).unwrap();
        // The client trusts the intermediate too, so that a leaf alone verifies as well.
        let (c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert, &sub.cert], None, TLS13_12));
        assert!(out.ok(), "{out:?}");
        let want: Vec<_> = sent.into_iter().cloned().collect();
        assert_eq!(c.peer_certificates().unwrap(), &want[..], "cert {} ca {}", cert.display(), ca.display());
    }

    // A CA bundle of several CAs: clients of each are accepted.
    let other = new_ca("Other CA");
    let bundle = pki.dir.write("bundle.pem", format!("{}{}", pki.ca.cert.pem(), other.cert.pem()));
    let ep = TlsEndpoint::load(&TlsSettings { ca: Some(bundle), ..pki.settings(true, true) }).unwrap();
    for (ca, cn) in [(&pki.ca, "a"), (&other, "b")] {
        let (_c, s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&client_leaf(ca, cn)), TLS13_12));
        assert!(out.ok(), "{out:?}");
        assert_eq!(ep.verified_cn(&s).as_deref(), Some(cn));
    }
}

#[test]
fn key_algorithms() {
    let pki = Pki::new();
    for alg in [&rcgen::PKCS_ECDSA_P256_SHA256, &rcgen::PKCS_ECDSA_P384_SHA384, &rcgen::PKCS_ED25519] {
        let server = leaf(&pki.ca, server_params(), KeyPair::generate_for(alg).unwrap());
        let cert = pki.dir.write("alg.pem", server.cert.pem());
        let key = pki.dir.write("alg.key", server.key.serialize_pem());
        let ep = TlsEndpoint::load(&TlsSettings { cert, key, ..pki.settings(true, true) }).unwrap();
        let device = leaf(&pki.ca, client_params("device-alg"), KeyPair::generate_for(alg).unwrap());
        let (_c, s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&device), TLS13_12));
        assert!(out.ok(), "{alg:?}: {out:?}");
        assert_eq!(ep.verified_cn(&s).as_deref(), Some("device-alg"));
    }
}

fn openssl(args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new("openssl").args(args).output().ok()?;
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    Some(out.stdout)
}

#[test]
fn pkcs1_and_sec1_key_files() {
    let pki = Pki::new();
    let Some(rsa_pkcs8) = openssl(&["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]) else {
        eprintln!("skipped: no openssl command");
        return;
    };
    // RSA, the key as PKCS#1 (RSA PRIVATE KEY).
    let rsa = KeyPair::from_pem(std::str::from_utf8(&rsa_pkcs8).unwrap()).unwrap();
    let server = leaf(&pki.ca, server_params(), rsa);
    let pkcs8_path = pki.dir.write("rsa8.key", &rsa_pkcs8);
    let pkcs1 = openssl(&["pkey", "-in", pkcs8_path.to_str().unwrap(), "-traditional"]).unwrap();
    assert!(pkcs1.starts_with(b"-----BEGIN RSA PRIVATE KEY-----"));
    let cert = pki.dir.write("rsa.pem", server.cert.pem());
    let key = pki.dir.write("rsa1.key", &pkcs1);
    let ep = TlsEndpoint::load(&TlsSettings { cert, key, ..pki.settings(false, true) }).unwrap();
    for versions in [TLS13_12, TLS12] {
        let (c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], None, versions));
        assert!(out.ok(), "{out:?}");
        assert_eq!(c.peer_certificates().unwrap()[0], *server.cert.der());
    }

    // ECDSA, the key as SEC1 (EC PRIVATE KEY), after an EC PARAMETERS section as
    // `openssl ecparam -genkey` writes it.
    let server = server_leaf(&pki.ca);
    let pkcs8_path = pki.dir.write("ec8.key", server.key.serialize_pem());
    let sec1 = openssl(&["pkey", "-in", pkcs8_path.to_str().unwrap(), "-traditional"]).unwrap();
    assert!(sec1.starts_with(b"-----BEGIN EC PRIVATE KEY-----"));
    let mut with_params = openssl(&["ecparam", "-name", "prime256v1"]).unwrap();
    with_params.extend_from_slice(&sec1);
    let cert = pki.dir.write("ec.pem", server.cert.pem());
    for (name, bytes) in [("ec1.key", &sec1), ("ec1-params.key", &with_params)] {
        let key = pki.dir.write(name, bytes);
        let ep = TlsEndpoint::load(&TlsSettings { cert: cert.clone(), key, ..pki.settings(false, true) }).unwrap();
        let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], None, TLS13_12));
        assert!(out.ok(), "{name}: {out:?}");
    }

    // Keys ring cannot sign with: P-521, RSA under 2048 bits (Node took them).
    for (name, args) in [
        ("p521", &["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-521"][..]),
        ("rsa1024", &["req", "-x509", "-newkey", "rsa:1024"][..]),
    ] {
        let cert = pki.dir.path(&format!("{name}.pem"));
        let key = pki.dir.path(&format!("{name}.key"));
        let mut args = args.to_vec();
        args.extend(["-nodes", "-subj", "/CN=localhost", "-days", "1", "-keyout", key.to_str().unwrap(), "-out", cert.to_str().unwrap()]);
        openssl(&args).unwrap();
        let err = load_err(&TlsSettings { cert, key: key.clone(), ..pki.settings(false, true) });
        assert!(matches!(err, TlsError::UnsupportedKey { .. }), "{name}: {err:?}");
        assert_names(&err, &key, "unsupported key");
    }

    // A key encrypted the old way (Proc-Type header).
    let enc = openssl(&["pkey", "-in", pkcs8_path.to_str().unwrap(), "-traditional", "-aes128", "-passout", "pass:secret"]).unwrap();
    let enc_path = pki.dir.write("enc-old.key", enc);
    let err = load_err(&TlsSettings { key: enc_path.clone(), ..pki.settings(false, true) });
    assert_names(&err, &enc_path, "encrypted");
}

// ---------------------------------------------------------------------------------------------
// The subject CN

fn cn_of(dn: DistinguishedName) -> Option<String> {
    let mut params = client_params("x");
    params.distinguished_name = dn;
    let key = KeyPair::generate().unwrap();
    subject_cn(params.self_signed(&key).unwrap().der())
}

#[test]
fn subject_cn_encodings() {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "Acme");
    dn.push(DnType::CommonName, "sensor-é€😀, \"x\"+y");
    assert_eq!(cn_of(dn).as_deref(), Some("sensor-é€😀, \"x\"+y"));

    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, DnValue::PrintableString("printable".try_into().unwrap()));
    assert_eq!(cn_of(dn).as_deref(), Some("printable"));

    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, DnValue::BmpString("bmp-é€".try_into().unwrap()));
    assert_eq!(cn_of(dn).as_deref(), Some("bmp-é€"));

    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, DnValue::UniversalString("univ-😀".try_into().unwrap()));
    assert_eq!(cn_of(dn).as_deref(), Some("univ-😀"));

    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, DnValue::TeletexString("teletex".try_into().unwrap()));
    assert_eq!(cn_of(dn).as_deref(), Some("teletex"));

    // No CN.
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "Acme");
    assert_eq!(cn_of(dn), None);

    // Not a certificate.
    assert_eq!(subject_cn(&CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x01])), None);
}

// ---------------------------------------------------------------------------------------------
// Over a socket

#[test]
fn over_loopback_tcp() {
    use std::net::{TcpListener, TcpStream};
    let pki = Pki::new();
    let ep = pki.endpoint(true, true);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server_ep = ep.clone();
    let server = std::thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        let mut tls = rustls::StreamOwned::new(server_ep.new_connection().unwrap(), sock);
        let mut buf = [0u8; 5];
        tls.read_exact(&mut buf).unwrap();
        let cn = server_ep.verified_cn(&tls.conn);
        tls.write_all(&buf).unwrap();
        tls.conn.send_close_notify();
        tls.flush().unwrap();
        cn
    });
    let device = client_leaf(&pki.ca, "tcp-device");
    let sock = TcpStream::connect(addr).unwrap();
    let mut tls = rustls::StreamOwned::new(client(client_config(&[&pki.ca.cert], Some(&device), TLS13_12)), sock);
    tls.write_all(b"hello").unwrap();
    let mut buf = [0u8; 5];
    tls.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"hello");
    assert_eq!(server.join().unwrap().as_deref(), Some("tcp-device"));
}

// ---------------------------------------------------------------------------------------------
// Revocation: CRLs, and the stapled OCSP response

/// A client certificate with a serial number of our choosing (what a CRL names).
fn client_leaf_serial(ca: &Ca, cn: &str, serial: u64) -> Leaf {
    let mut params = client_params(cn);
    params.serial_number = Some(SerialNumber::from(serial));
    leaf(ca, params, KeyPair::generate().unwrap())
}

/// A CRL of `ca` revoking `serials`, valid from `this_update` to `next_update`.
fn crl(ca: &Ca, serials: &[u64], this_update: (i32, u8, u8), next_update: (i32, u8, u8)) -> CertificateRevocationList {
    CertificateRevocationListParams {
        this_update: date_time_ymd(this_update.0, this_update.1, this_update.2),
        next_update: date_time_ymd(next_update.0, next_update.1, next_update.2),
        crl_number: SerialNumber::from(1u64),
        issuing_distribution_point: None,
        revoked_certs: serials
            .iter()
            .map(|&s| RevokedCertParams {
                serial_number: SerialNumber::from(s),
                revocation_time: date_time_ymd(2024, 1, 1),
                reason_code: Some(RevocationReason::KeyCompromise),
                invalidity_date: None,
            })
            .collect(),
        key_identifier_method: KeyIdMethod::Sha256,
    }
    .signed_by(&ca.issuer)
    .unwrap()
}

const CURRENT: ((i32, u8, u8), (i32, u8, u8)) = ((2024, 1, 1), (2099, 1, 1));

fn revoked(e: &rustls::Error) -> bool {
    matches!(e, rustls::Error::InvalidCertificate(CertificateError::Revoked))
}

#[test]
fn a_crl_refuses_the_certificates_it_revokes() {
    let pki = Pki::new();
    let list = crl(&pki.ca, &[2], CURRENT.0, CURRENT.1);
    let crl_file = pki.dir.write("ca.crl", list.pem().unwrap());
    let ep = TlsEndpoint::load(&TlsSettings { crl: Some(crl_file), ..pki.settings(true, true) }).unwrap();
    assert_eq!(ep.crl_count(), 1);

    // Not revoked: in, with its CN.
    let good = client_leaf_serial(&pki.ca, "device-1", 1);
    let (_c, s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&good), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(ep.verified_cn(&s).as_deref(), Some("device-1"));

    // Revoked: refused in the handshake, TLS 1.3 and 1.2.
    let bad = client_leaf_serial(&pki.ca, "device-2", 2);
    for versions in [TLS13_12, TLS12] {
        let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&bad), versions));
        assert_refused(&out, revoked);
    }

    // The same endpoint without the CRL lets it in.
    let (_c, _s, out) = connect(&pki.endpoint(true, true), client_config(&[&pki.ca.cert], Some(&bad), TLS13_12));
    assert!(out.ok(), "{out:?}");
}

#[test]
fn with_an_optional_certificate_a_revoked_one_is_not_verified() {
    let pki = Pki::new();
    let crl_file = pki.dir.write("ca.crl", crl(&pki.ca, &[2], CURRENT.0, CURRENT.1).pem().unwrap());
    let ep = TlsEndpoint::load(&TlsSettings { crl: Some(crl_file), ..pki.settings(true, false) }).unwrap();
    // In (the certificate is optional and unverified), but without a verified CN: Node's
    // socket.authorized is false for it too.
    let bad = client_leaf_serial(&pki.ca, "device-2", 2);
    let (_c, s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&bad), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(ep.verified_cn(&s), None);
    let good = client_leaf_serial(&pki.ca, "device-1", 1);
    let (_c, s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&good), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(ep.verified_cn(&s).as_deref(), Some("device-1"));
}

#[test]
fn crl_files_in_der_and_with_several_crls() {
    let pki = Pki::new();
    let bad = client_leaf_serial(&pki.ca, "device-2", 2);
    let good = client_leaf_serial(&pki.ca, "device-1", 1);
    let ours = crl(&pki.ca, &[2], CURRENT.0, CURRENT.1);

    // One DER CRL.
    let der = pki.dir.write("ca.crl.der", ours.der().as_ref());
    let ep = TlsEndpoint::load(&TlsSettings { crl: Some(der), ..pki.settings(true, true) }).unwrap();
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&bad), TLS13_12));
    assert_refused(&out, revoked);
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&good), TLS13_12));
    assert!(out.ok(), "{out:?}");

    // Several CRLs in one PEM file (another CA's first), text around them as openssl writes it.
    let other = new_ca("Other CA");
    let theirs = crl(&other, &[1], CURRENT.0, CURRENT.1);
    let pem = format!("Certificate Revocation List (CRL):\n  ...\n{}{}", theirs.pem().unwrap(), ours.pem().unwrap());
    let both = pki.dir.write("both.crl", pem);
    let ep = TlsEndpoint::load(&TlsSettings { crl: Some(both), ..pki.settings(true, true) }).unwrap();
    assert_eq!(ep.crl_count(), 2);
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&bad), TLS13_12));
    assert_refused(&out, revoked);
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&good), TLS13_12));
    assert!(out.ok(), "{out:?}");
}

#[test]
fn a_certificate_without_a_crl_of_its_issuer_is_refused() {
    // As OpenSSL's CRL_CHECK_ALL (Node's `crl`): the status of a certificate whose issuer has no
    // CRL in the file is unknown, and that refuses it.
    let pki = Pki::new();
    let other = new_ca("Other CA");
    let crl_file = pki.dir.write("other.crl", crl(&other, &[], CURRENT.0, CURRENT.1).pem().unwrap());
    let ep = TlsEndpoint::load(&TlsSettings { crl: Some(crl_file), ..pki.settings(true, true) }).unwrap();
    let good = client_leaf_serial(&pki.ca, "device-1", 1);
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&good), TLS13_12));
    assert_refused(&out, |e| matches!(e, rustls::Error::InvalidCertificate(CertificateError::UnknownRevocationStatus)));

    // Through an intermediate: the CRL of the intermediate covers the device, the root's CRL
    // covers the intermediate; both are needed.
    let sub = intermediate_ca(&pki.ca, "Spindle Sub CA");
    let mut device = client_leaf_serial(&sub, "device-3", 3);
    device.chain.push(sub.cert.der().clone());
    let sub_only = pki.dir.write("sub.crl", crl(&sub, &[], CURRENT.0, CURRENT.1).pem().unwrap());
    let ep = TlsEndpoint::load(&TlsSettings { crl: Some(sub_only), ..pki.settings(true, true) }).unwrap();
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&device), TLS13_12));
    assert_refused(&out, |e| matches!(e, rustls::Error::InvalidCertificate(CertificateError::UnknownRevocationStatus)));
    let chain_pem = format!("{}{}", crl(&sub, &[], CURRENT.0, CURRENT.1).pem().unwrap(), crl(&pki.ca, &[], CURRENT.0, CURRENT.1).pem().unwrap());
    let both = pki.dir.write("chain.crl", chain_pem);
    let ep = TlsEndpoint::load(&TlsSettings { crl: Some(both.clone()), ..pki.settings(true, true) }).unwrap();
    let (_c, s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&device), TLS13_12));
    assert!(out.ok(), "{out:?}");
    assert_eq!(ep.verified_cn(&s).as_deref(), Some("device-3"));
    // The intermediate revoked by the root: its devices are refused.
    let sub_serial = x509_parser::parse_x509_certificate(sub.cert.der()).unwrap().1.raw_serial().to_vec();
    let root_crl = CertificateRevocationListParams {
        this_update: date_time_ymd(2024, 1, 1),
        next_update: date_time_ymd(2099, 1, 1),
        crl_number: SerialNumber::from(2u64),
        issuing_distribution_point: None,
        revoked_certs: vec![RevokedCertParams {
            serial_number: SerialNumber::from_slice(&sub_serial),
            revocation_time: date_time_ymd(2024, 1, 1),
            reason_code: Some(RevocationReason::CaCompromise),
            invalidity_date: None,
        }],
        key_identifier_method: KeyIdMethod::Sha256,
    }
    .signed_by(&pki.ca.issuer)
    .unwrap();
    let chain_pem = format!("{}{}", crl(&sub, &[], CURRENT.0, CURRENT.1).pem().unwrap(), root_crl.pem().unwrap());
    let ep = TlsEndpoint::load(&TlsSettings { crl: Some(pki.dir.write("sub-revoked.crl", chain_pem)), ..pki.settings(true, true) }).unwrap();
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&device), TLS13_12));
    assert_refused(&out, revoked);
}

#[test]
fn an_expired_crl_refuses_what_it_covers() {
    // As OpenSSL ("CRL has expired"): a CRL past its nextUpdate no longer vouches for anyone.
    let pki = Pki::new();
    let crl_file = pki.dir.write("old.crl", crl(&pki.ca, &[], (2020, 1, 1), (2021, 1, 1)).pem().unwrap());
    let ep = TlsEndpoint::load(&TlsSettings { crl: Some(crl_file), ..pki.settings(true, true) }).unwrap();
    let good = client_leaf_serial(&pki.ca, "device-1", 1);
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&good), TLS13_12));
    assert_refused(&out, |e| matches!(e, rustls::Error::InvalidCertificate(CertificateError::ExpiredRevocationList | CertificateError::ExpiredRevocationListContext { .. })));
}

#[test]
fn a_crl_signed_by_someone_else_is_refused() {
    // A CRL claiming to be the CA's but signed with another key: a certificate it would cover
    // is refused (its status cannot be trusted), not let in.
    let pki = Pki::new();
    let impostor_key = KeyPair::generate().unwrap();
    let impostor = Ca { cert: ca_params("Spindle Test CA").self_signed(&impostor_key).unwrap(), issuer: Issuer::new(ca_params("Spindle Test CA"), impostor_key) };
    let crl_file = pki.dir.write("forged.crl", crl(&impostor, &[], CURRENT.0, CURRENT.1).pem().unwrap());
    let ep = TlsEndpoint::load(&TlsSettings { crl: Some(crl_file), ..pki.settings(true, true) }).unwrap();
    let good = client_leaf_serial(&pki.ca, "device-1", 1);
    let (_c, _s, out) = connect(&ep, client_config(&[&pki.ca.cert], Some(&good), TLS13_12));
    assert!(out.server_error.is_some(), "{out:?}");
}

#[test]
fn bad_crl_files_are_named() {
    let pki = Pki::new();
    let missing = pki.dir.path("nope.crl");
    let err = load_err(&TlsSettings { crl: Some(missing.clone()), ..pki.settings(true, true) });
    assert!(matches!(err, TlsError::Read { file: TlsFile::Crl, .. }), "{err:?}");
    assert_names(&err, &missing, "TLS CRL file");

    // Read and checked even without client certificates, like `ca`.
    let err = load_err(&TlsSettings { crl: Some(missing.clone()), ..pki.settings(false, true) });
    assert_names(&err, &missing, "TLS CRL file");

    // PEM without a CRL (a certificate).
    let cert_pem = pki.dir.write("cert.crl", pki.ca.cert.pem());
    let err = load_err(&TlsSettings { crl: Some(cert_pem.clone()), ..pki.settings(true, true) });
    assert!(matches!(err, TlsError::NoCrl { .. }), "{err:?}");
    assert_names(&err, &cert_pem, "no CRL in it");

    // DER that is not a CRL (a certificate), and bytes that are not DER.
    let cert_der = pki.dir.write("cert.der", pki.ca.cert.der().as_ref());
    let err = load_err(&TlsSettings { crl: Some(cert_der.clone()), ..pki.settings(true, true) });
    assert!(matches!(err, TlsError::BadCrl { index: 0, .. }), "{err:?}");
    assert_names(&err, &cert_der, "CRL #1 cannot be used");
    let junk = pki.dir.write("junk.crl", b"not a CRL at all");
    let err = load_err(&TlsSettings { crl: Some(junk.clone()), ..pki.settings(true, true) });
    assert_names(&err, &junk, "CRL #1 cannot be used");

    // The second CRL of a PEM file broken: named by its place.
    let good = crl(&pki.ca, &[], CURRENT.0, CURRENT.1).pem().unwrap();
    let broken = format!("{good}-----BEGIN X509 CRL-----\nMIIBAAAA\n-----END X509 CRL-----\n");
    let second = pki.dir.write("second.crl", broken);
    let err = load_err(&TlsSettings { crl: Some(second.clone()), ..pki.settings(true, true) });
    assert_names(&err, &second, "CRL #2 cannot be used");
}

/// A client verifier that keeps the OCSP response the server stapled.
#[derive(Debug)]
struct SeesStaple {
    inner: Arc<dyn rustls::client::danger::ServerCertVerifier>,
    seen: Mutex<Option<Vec<u8>>>,
}

impl rustls::client::danger::ServerCertVerifier for SeesStaple {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        *self.seen.lock().unwrap() = Some(ocsp_response.to_vec());
        self.inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }
    fn verify_tls12_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &rustls::DigitallySignedStruct) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(m, c, d)
    }
    fn verify_tls13_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &rustls::DigitallySignedStruct) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(m, c, d)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

fn staple_seen(ep: &TlsEndpoint, ca: &Ca, versions: &[&'static SupportedProtocolVersion]) -> Vec<u8> {
    let mut roots = RootCertStore::empty();
    roots.add(ca.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build().unwrap();
    let sees = Arc::new(SeesStaple { inner, seen: Mutex::new(None) });
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(sees.clone())
        .with_no_client_auth();
    let (_c, _s, out) = connect(ep, Arc::new(config));
    assert!(out.ok(), "{out:?}");
    let seen = sees.seen.lock().unwrap().clone();
    seen.expect("the certificate was verified")
}

#[test]
fn the_stapled_ocsp_response_reaches_clients() {
    let pki = Pki::new();
    let ep = pki.endpoint(false, true);
    assert_eq!(ep.ocsp(), None);
    // rustls clients always ask for the status (status_request); nothing stapled: empty.
    assert!(staple_seen(&ep, &pki.ca, TLS13_12).is_empty());

    // The response is sent as it is (rustls does not parse it): TLS 1.3 and 1.2.
    let response = b"\x30\x03\x0a\x01\x00".to_vec(); // OCSPResponse { responseStatus: successful }
    let stapled = ep.with_ocsp(Some(response.clone()));
    assert_eq!(stapled.ocsp(), Some(response.as_slice()));
    assert_eq!(stapled.leaf(), ep.leaf());
    assert_eq!(staple_seen(&stapled, &pki.ca, TLS13_12), response);
    assert_eq!(staple_seen(&stapled, &pki.ca, TLS12), response);
    // The endpoint it was made from is unchanged, and the staple can be taken away again.
    assert!(staple_seen(&ep, &pki.ca, TLS13_12).is_empty());
    assert!(staple_seen(&stapled.with_ocsp(None), &pki.ca, TLS13_12).is_empty());
    assert_eq!(ep.leaf(), pki.server.cert.der());
}
