//! The server side of a TLS endpoint (MQTT over TLS), on rustls with the ring provider: the
//! behaviour Node's `tls.createServer` has in Spindle today (`tlsOptions()` in
//! src/listener/listeners.ts, `SocketTransport.verifiedCN` in src/listener/socket-transport.ts).
//!
//! - TLS 1.2 and 1.3, no ALPN.
//! - The server presents the chain of `cert` (leaf first, as given) with the key of `key`
//!   (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC; RSA, ECDSA P-256/P-384 or Ed25519). A `cert` holding
//!   only the leaf is completed with its issuers from `ca`, as OpenSSL does.
//! - Client certificates ([`ClientAuth`]): not asked for without `request_cert`; with it and
//!   `reject_unauthorized`, required and verified against `ca` (the system roots without `ca`);
//!   with it and without `reject_unauthorized`, asked for but optional, and accepted even when
//!   it does not verify (the client must still prove it holds the certificate's key).
//! - [`TlsEndpoint::verified_cn`]: the client certificate's subject CN when that certificate
//!   verified (Node's `socket.authorized`).
//! - Revocation ([`TlsSettings::crl`]): client certificates are checked against the CRLs of a
//!   file (PEM, one or more `X509 CRL` sections, or one DER CRL), as Node (OpenSSL) checks them
//!   with its `crl` option, which sets X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL:
//!   every certificate of the client's chain below the trust anchor must be covered by a CRL of
//!   its issuer (a certificate whose issuer has no CRL in the file is refused: its status is
//!   unknown), and a CRL past its nextUpdate refuses the certificates it covers (OpenSSL's
//!   "CRL has expired"). A revoked certificate is refused in the handshake with `Required`, and
//!   is not verified (no CN) with `Optional`.
//! - OCSP stapling ([`TlsEndpoint::with_ocsp`]): a DER OCSP response sent to clients that ask
//!   for the server certificate's status (status_request); the caller fetches and refreshes it.
//!
//! A reload is another [`TlsEndpoint::load`]: the caller swaps the endpoint (or its
//! `Arc<ServerConfig>`) for new connections; a `ServerConnection` keeps the config it was made with.
//!
//! Where this is not Node (OpenSSL): ring cannot sign with P-521 or RSA keys under 2048 bits, and
//! webpki does not accept client certificate chains signed with SHA-1 or P-521;
//! `TRUSTED CERTIFICATE` PEM sections are skipped; a certificate in `ca` is a trust anchor even
//! when it is not self-signed (OpenSSL without X509_V_FLAG_PARTIAL_CHAIN wants the chain to end
//! at a self-signed root); TLS 1.3 resumption uses rustls' in-memory session cache (256
//! sessions per endpoint) rather than OpenSSL's tickets.

mod error;
mod verify;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{InconsistentKeys, RootCertStore, ServerConfig, ServerConnection};

pub use error::{TlsError, TlsFile};
pub use verify::subject_cn;

/// The settings of a TLS endpoint: `mqtt.tls.*` in the configuration file, `sslConfig` of an
/// endpoint of the admin API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    /// The server certificate chain, PEM: the server's certificate first, then intermediates.
    pub cert: PathBuf,
    /// The server private key, PEM: `PRIVATE KEY` (PKCS#8), `RSA PRIVATE KEY` (PKCS#1) or
    /// `EC PRIVATE KEY` (SEC1); not encrypted.
    pub key: PathBuf,
    /// CA certificates (PEM) client certificates are verified against; None: the system roots
    /// (SSL_CERT_FILE / SSL_CERT_DIR, else the distribution's bundle). Read and checked whenever
    /// it is set, even without `request_cert`.
    pub ca: Option<PathBuf>,
    /// Ask clients for a certificate.
    pub request_cert: bool,
    /// With `request_cert`: refuse clients without a certificate that verifies. Ignored without
    /// `request_cert` (as in Node, where Spindle passes `requestCert && rejectUnauthorized`).
    pub reject_unauthorized: bool,
    /// Certificate revocation lists client certificates are checked against: a PEM file of one or
    /// more `X509 CRL` sections, or one DER CRL. Read and checked whenever it is set.
    pub crl: Option<PathBuf>,
}

impl TlsSettings {
    /// What the endpoint asks of clients.
    pub fn client_auth(&self) -> ClientAuth {
        match (self.request_cert, self.reject_unauthorized) {
            (false, _) => ClientAuth::Off,
            (true, true) => ClientAuth::Required,
            (true, false) => ClientAuth::Optional,
        }
    }
}

/// Client certificates of an endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    /// Not asked for (`request_cert` false); clients present none.
    Off,
    /// Required and verified in the handshake: a client without one, or with one that does not
    /// chain to the roots, is refused.
    Required,
    /// Asked for but optional; any certificate is accepted (Node's `rejectUnauthorized: false`).
    /// Whether it verified is answered by [`TlsEndpoint::verified_cn`].
    Optional,
}

/// A loaded TLS endpoint: the rustls server config new connections are made with.
/// Cloning is cheap (two `Arc`s).
#[derive(Clone, Debug)]
pub struct TlsEndpoint {
    config: Arc<ServerConfig>,
    client_auth: ClientAuth,
    /// The verifying (webpki) client verifier over the endpoint's roots; None with ClientAuth::Off.
    verifier: Option<Arc<dyn ClientCertVerifier>>,
    /// The server's chain and key; its `ocsp` is the stapled response.
    certified: Arc<CertifiedKey>,
    /// CRLs read from `crl`.
    crls: usize,
}

impl TlsEndpoint {
    /// Reads the endpoint's files and builds its server config. Every error names its file.
    pub fn load(settings: &TlsSettings) -> Result<TlsEndpoint, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let chain = read_server_chain(&settings.cert)?;
        let key = read_private_key(&settings.key)?;
        // Like Node, which is given the file's contents whether or not certificates are
        // requested, `ca` is read and checked whenever it is set.
        let ca = match &settings.ca {
            Some(path) => {
                let certs = read_certificates(TlsFile::Ca, path)?;
                let roots = trust_anchors(path, &certs)?;
                Some((certs, roots))
            }
            None => None,
        };
        let chain = match &ca {
            Some((ca_certs, _)) if chain.len() == 1 => complete_chain(chain, ca_certs),
            _ => chain,
        };
        let certified = certified_key(chain, key, &settings.cert, &settings.key, &provider)?;
        let crls = match &settings.crl {
            Some(path) => read_crls(path)?,
            None => Vec::new(),
        };
        let crl_count = crls.len();

        let client_auth = settings.client_auth();
        let verifier = match client_auth {
            ClientAuth::Off => None,
            ClientAuth::Required | ClientAuth::Optional => {
                let ca_roots = ca.map(|(_, roots)| roots);
                Some(client_verifier(ca_roots, settings.ca.as_deref(), crls, settings.crl.as_deref(), &provider)?)
            }
        };
        let handshake_verifier: Arc<dyn ClientCertVerifier> = match (&verifier, client_auth) {
            (Some(v), ClientAuth::Required) => v.clone(),
            (Some(v), ClientAuth::Optional) => Arc::new(verify::AnyClientCert::new(v.clone())),
            _ => WebPkiClientVerifier::no_client_auth(),
        };

        let certified = Arc::new(certified);
        let config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(TlsError::Config)?
            .with_client_cert_verifier(handshake_verifier)
            .with_cert_resolver(Arc::new(SingleCertAndKey::from(certified.clone())));

        Ok(TlsEndpoint { config: Arc::new(config), client_auth, verifier, certified, crls: crl_count })
    }

    /// This endpoint stapling `ocsp` (a DER OCSPResponse for its certificate) to the handshakes
    /// of clients that ask for it, or stapling nothing (None). The response is sent as it is:
    /// the caller checked it is for this certificate (see [`TlsEndpoint::leaf`]) and current.
    /// Connections made before keep what they had.
    pub fn with_ocsp(&self, ocsp: Option<Vec<u8>>) -> TlsEndpoint {
        let certified = Arc::new(CertifiedKey { ocsp, ..(*self.certified).clone() });
        let mut config = (*self.config).clone();
        config.cert_resolver = Arc::new(SingleCertAndKey::from(certified.clone()));
        TlsEndpoint { config: Arc::new(config), client_auth: self.client_auth, verifier: self.verifier.clone(), certified, crls: self.crls }
    }

    /// The server's certificate (the first of its chain).
    pub fn leaf(&self) -> &CertificateDer<'static> {
        &self.certified.cert[0]
    }

    /// The OCSP response stapled now, if any.
    pub fn ocsp(&self) -> Option<&[u8]> {
        self.certified.ocsp.as_deref()
    }

    /// How many CRLs client certificates are checked against.
    pub fn crl_count(&self) -> usize {
        self.crls
    }

    /// The server config new connections are made with.
    pub fn config(&self) -> &Arc<ServerConfig> {
        &self.config
    }

    /// What the endpoint asks of clients.
    pub fn client_auth(&self) -> ClientAuth {
        self.client_auth
    }

    /// A new server-side connection with this endpoint's config.
    pub fn new_connection(&self) -> Result<ServerConnection, rustls::Error> {
        ServerConnection::new(self.config.clone())
    }

    /// The subject CN of the client's certificate when that certificate verified against this
    /// endpoint's roots (Node's `socket.authorized`), the first CN when there are several; None
    /// while handshaking, without a client certificate, or when it did not verify.
    ///
    /// `conn` must have been made with this endpoint's config: with [`ClientAuth::Required`] the
    /// handshake already verified the certificate and it is not verified again; with
    /// [`ClientAuth::Optional`] the certificate is verified here, against this endpoint's roots, now.
    pub fn verified_cn(&self, conn: &ServerConnection) -> Option<String> {
        if conn.is_handshaking() {
            return None;
        }
        let (end_entity, intermediates) = conn.peer_certificates()?.split_first()?;
        match self.client_auth {
            ClientAuth::Off => return None,
            ClientAuth::Required => {}
            ClientAuth::Optional => {
                self.verifier
                    .as_ref()?
                    .verify_client_cert(end_entity, intermediates, UnixTime::now())
                    .ok()?;
            }
        }
        subject_cn(end_entity)
    }
}

/// The CERTIFICATE sections of the server's chain file, each checked to be a certificate.
fn read_server_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let chain = read_certificates(TlsFile::Cert, path)?;
    for (index, cert) in chain.iter().enumerate() {
        if let Err(e) = x509_parser::parse_x509_certificate(cert) {
            return Err(TlsError::BadCertificate {
                file: TlsFile::Cert,
                path: path.to_owned(),
                index,
                detail: e.to_string(),
            });
        }
    }
    Ok(chain)
}

/// A `cert` file holding only the server's certificate is sent with its issuers found in `ca`,
/// up to a self-issued one, as OpenSSL (so Node) completes such a chain from its certificate
/// store; a file holding more than one certificate is sent as it is. An issuer is a `ca`
/// certificate whose subject is the certificate's issuer name and whose key verifies its signature.
fn complete_chain(mut chain: Vec<CertificateDer<'static>>, ca: &[CertificateDer<'static>]) -> Vec<CertificateDer<'static>> {
    const MAX_DEPTH: usize = 10;
    let parsed: Vec<_> = ca
        .iter()
        .enumerate()
        .filter_map(|(i, der)| x509_parser::parse_x509_certificate(der).ok().map(|(_, c)| (i, c)))
        .collect();
    while chain.len() < MAX_DEPTH {
        let Some(Ok((_, last))) = chain.last().map(|der| x509_parser::parse_x509_certificate(der)) else {
            break;
        };
        if last.subject().as_raw() == last.issuer().as_raw() {
            break;
        }
        let issuer = parsed.iter().find(|(i, c)| {
            c.subject().as_raw() == last.issuer().as_raw()
                && last.verify_signature(Some(c.public_key())).is_ok()
                && !chain.contains(&ca[*i])
        });
        match issuer {
            Some((i, _)) => chain.push(ca[*i].clone()),
            None => break,
        }
    }
    chain
}

/// The server's chain and key, checked to belong together.
fn certified_key(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    cert_path: &Path,
    key_path: &Path,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, TlsError> {
    let signing_key = provider.key_provider.load_private_key(key).map_err(|e| TlsError::UnsupportedKey {
        path: key_path.to_owned(),
        detail: format!("{e} (RSA of at least 2048 bits, ECDSA P-256 or P-384, or Ed25519 expected)"),
    })?;
    let certified = CertifiedKey::new(chain, signing_key);
    match certified.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(InconsistentKeys::Unknown)) => Ok(certified),
        Err(rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch)) => {
            Err(TlsError::KeyMismatch { cert: cert_path.to_owned(), key: key_path.to_owned() })
        }
        Err(e) => Err(TlsError::BadCertificate {
            file: TlsFile::Cert,
            path: cert_path.to_owned(),
            index: 0,
            detail: e.to_string(),
        }),
    }
}

/// The certificates of the CA file `path` as trust anchors.
fn trust_anchors(path: &Path, certs: &[CertificateDer<'static>]) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for (index, cert) in certs.iter().enumerate() {
        roots.add(cert.clone()).map_err(|e| TlsError::BadCertificate {
            file: TlsFile::Ca,
            path: path.to_owned(),
            index,
            detail: e.to_string(),
        })?;
    }
    Ok(roots)
}

/// The verifying client verifier: certificates must chain to `ca_roots` (read from `ca_path`),
/// or to the system roots without them. As with Node, the subjects of the `ca` certificates are
/// sent to clients as the acceptable issuers; the system roots are not.
///
/// With `crls`, every certificate of the chain is checked against them (OpenSSL's
/// CRL_CHECK_ALL, which Node sets with its `crl` option): a certificate whose issuer has no CRL
/// there is refused (unknown status is not allowed), and so is one covered by an expired CRL
/// (nextUpdate enforced, as OpenSSL does).
fn client_verifier(
    ca_roots: Option<RootCertStore>,
    ca_path: Option<&Path>,
    crls: Vec<CertificateRevocationListDer<'static>>,
    crl_path: Option<&Path>,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let system_roots = ca_roots.is_none();
    let roots = match ca_roots {
        Some(roots) => roots,
        None => {
            let mut roots = RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            let (added, _ignored) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                let detail = match found.errors.first() {
                    Some(e) => e.to_string(),
                    None => "none found (set `ca`, or install the ca-certificates package)".to_owned(),
                };
                return Err(TlsError::SystemRoots { detail });
            }
            roots
        }
    };
    let mut builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
    if system_roots {
        builder = builder.clear_root_hint_subjects();
    }
    if !crls.is_empty() {
        builder = builder.with_crls(crls).enforce_revocation_expiration();
    }
    builder.build().map_err(|e| match (&e, crl_path, ca_path) {
        (rustls::server::VerifierBuilderError::InvalidCrl(_), Some(path), _) => TlsError::BadCrl {
            path: path.to_owned(),
            index: 0,
            detail: e.to_string(),
        },
        (_, _, ca_path) => match ca_path {
        Some(path) => TlsError::BadCertificate {
            file: TlsFile::Ca,
            path: path.to_owned(),
            index: 0,
            detail: e.to_string(),
        },
        None => TlsError::SystemRoots { detail: e.to_string() },
        },
    })
}

/// Reads and checks a CRL file as [`TlsEndpoint::load`] does (for a configuration check before
/// an endpoint opens); answers how many CRLs it holds.
pub fn check_crl_file(path: &Path) -> Result<usize, TlsError> {
    read_crls(path).map(|crls| crls.len())
}

/// The CRLs of `path`: PEM (`-----BEGIN X509 CRL-----` sections, at least one) or one DER CRL;
/// each checked to be a CRL. A certificate in the file is not a CRL: it is refused by name.
fn read_crls(path: &Path) -> Result<Vec<CertificateRevocationListDer<'static>>, TlsError> {
    let bytes = read_file(TlsFile::Crl, path)?;
    let crls: Vec<CertificateRevocationListDer<'static>> = if contains(&bytes, b"-----BEGIN ") {
        let crls = CertificateRevocationListDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| pem_error(TlsFile::Crl, path, e))?;
        if crls.is_empty() {
            return Err(TlsError::NoCrl { path: path.to_owned() });
        }
        crls
    } else {
        vec![CertificateRevocationListDer::from(bytes)]
    };
    for (index, crl) in crls.iter().enumerate() {
        match x509_parser::parse_x509_crl(crl) {
            Ok((rest, _)) if rest.is_empty() => {}
            Ok(_) => {
                return Err(TlsError::BadCrl { path: path.to_owned(), index, detail: "trailing bytes after the CRL".to_owned() });
            }
            Err(e) => return Err(TlsError::BadCrl { path: path.to_owned(), index, detail: e.to_string() }),
        }
    }
    Ok(crls)
}

fn read_file(file: TlsFile, path: &Path) -> Result<Vec<u8>, TlsError> {
    fs::read(path).map_err(|source| TlsError::Read { file, path: path.to_owned(), source })
}

/// The CERTIFICATE sections of a PEM file, in file order; at least one.
fn read_certificates(file: TlsFile, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem_bytes = read_file(file, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem_bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(file, path, e))?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate { file, path: path.to_owned() });
    }
    Ok(certs)
}

/// The first private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem_bytes = read_file(TlsFile::Key, path)?;
    if contains(&pem_bytes, b"-----BEGIN ENCRYPTED PRIVATE KEY-----") || contains(&pem_bytes, b"Proc-Type: 4,ENCRYPTED") {
        return Err(TlsError::UnsupportedKey {
            path: path.to_owned(),
            detail: "the key is encrypted (a passphrase is not supported): decrypt it, e.g. `openssl pkey -in key.pem -out plain.pem`".to_owned(),
        });
    }
    match PrivateKeyDer::from_pem_slice(&pem_bytes) {
        Ok(key) => Ok(key),
        Err(pem::Error::NoItemsFound) => match other_private_key_label(&pem_bytes) {
            Some(label) => Err(TlsError::UnsupportedKey {
                path: path.to_owned(),
                detail: format!("PEM section {label} (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY expected)"),
            }),
            None => Err(TlsError::NoKey { path: path.to_owned() }),
        },
        Err(e) => Err(pem_error(TlsFile::Key, path, e)),
    }
}

fn pem_error(file: TlsFile, path: &Path, e: pem::Error) -> TlsError {
    match e {
        pem::Error::Io(source) => TlsError::Read { file, path: path.to_owned(), source },
        e => TlsError::Pem { file, path: path.to_owned(), detail: e.to_string() },
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The label of the first `-----BEGIN ... PRIVATE KEY-----` line (e.g. "DSA PRIVATE KEY"), if any.
fn other_private_key_label(pem_bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(pem_bytes);
    text.lines().find_map(|line| {
        let label = line.trim().strip_prefix("-----BEGIN ")?.strip_suffix("-----")?;
        label.ends_with("PRIVATE KEY").then(|| label.to_owned())
    })
}
