//! What can go wrong loading a TLS endpoint: every error names the file it is about.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Which of an endpoint's files an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsFile {
    /// The server certificate chain (`mqtt.tls.cert`, `sslConfig.cert`).
    Cert,
    /// The server private key (`mqtt.tls.key`, `sslConfig.key`).
    Key,
    /// The CA certificates client certificates are verified against (`mqtt.tls.ca`, `sslConfig.ca`).
    Ca,
    /// The certificate revocation lists client certificates are checked against (`mqtt.tls.crl`,
    /// `sslConfig.crl`).
    Crl,
}

impl fmt::Display for TlsFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TlsFile::Cert => "certificate",
            TlsFile::Key => "private key",
            TlsFile::Ca => "CA",
            TlsFile::Crl => "CRL",
        })
    }
}

/// A TLS endpoint that could not be loaded. The Display text names the file and what is wrong
/// with it, e.g. `TLS private key file /etc/spindle/key.pem: cannot read it: No such file or
/// directory (os error 2)`.
#[derive(Debug)]
#[non_exhaustive]
pub enum TlsError {
    /// The file could not be read (missing, not readable, a directory).
    Read { file: TlsFile, path: PathBuf, source: io::Error },
    /// The file is not well-formed PEM (a section without its END line, bad base64).
    Pem { file: TlsFile, path: PathBuf, detail: String },
    /// The file holds no `CERTIFICATE` PEM section.
    NoCertificate { file: TlsFile, path: PathBuf },
    /// A certificate in the file is not a usable X.509 certificate (`index` counts from 0 in file order).
    BadCertificate { file: TlsFile, path: PathBuf, index: usize, detail: String },
    /// The key file holds no `PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY` section.
    NoKey { path: PathBuf },
    /// The key file holds a key that cannot be used: encrypted, or not RSA/ECDSA (P-256, P-384)/Ed25519.
    UnsupportedKey { path: PathBuf, detail: String },
    /// The private key is not the key of the first certificate of the chain.
    KeyMismatch { cert: PathBuf, key: PathBuf },
    /// The CRL file holds PEM but no `X509 CRL` section.
    NoCrl { path: PathBuf },
    /// A CRL of the file cannot be used (`index` counts from 0 in file order).
    BadCrl { path: PathBuf, index: usize, detail: String },
    /// No usable system root certificate was found (client certificates requested, no `ca`).
    SystemRoots { detail: String },
    /// rustls refused the configuration (not expected with files that passed the checks above).
    Config(rustls::Error),
}

impl TlsError {
    /// The file the error is about, if it is about one (KeyMismatch: the key file).
    pub fn path(&self) -> Option<&Path> {
        match self {
            TlsError::Read { path, .. }
            | TlsError::Pem { path, .. }
            | TlsError::NoCertificate { path, .. }
            | TlsError::BadCertificate { path, .. }
            | TlsError::NoKey { path }
            | TlsError::UnsupportedKey { path, .. }
            | TlsError::NoCrl { path }
            | TlsError::BadCrl { path, .. } => Some(path),
            TlsError::KeyMismatch { key, .. } => Some(key),
            TlsError::SystemRoots { .. } | TlsError::Config(_) => None,
        }
    }
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::Read { file, path, source } => {
                write!(f, "TLS {file} file {}: cannot read it: {source}", path.display())
            }
            TlsError::Pem { file, path, detail } => {
                write!(f, "TLS {file} file {}: not valid PEM: {detail}", path.display())
            }
            TlsError::NoCertificate { file, path } => write!(
                f,
                "TLS {file} file {}: no certificate in it (no -----BEGIN CERTIFICATE----- PEM section)",
                path.display()
            ),
            TlsError::BadCertificate { file, path, index, detail } => write!(
                f,
                "TLS {file} file {}: certificate #{} cannot be used: {detail}",
                path.display(),
                index + 1
            ),
            TlsError::NoKey { path } => write!(
                f,
                "TLS private key file {}: no private key in it (no PEM section PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)",
                path.display()
            ),
            TlsError::UnsupportedKey { path, detail } => {
                write!(f, "TLS private key file {}: unsupported key: {detail}", path.display())
            }
            TlsError::KeyMismatch { cert, key } => write!(
                f,
                "TLS private key file {}: the key does not match the certificate in {}",
                key.display(),
                cert.display()
            ),
            TlsError::NoCrl { path } => write!(
                f,
                "TLS CRL file {}: no CRL in it (no -----BEGIN X509 CRL----- PEM section; a DER file holds one CRL and no PEM)",
                path.display()
            ),
            TlsError::BadCrl { path, index, detail } => {
                write!(f, "TLS CRL file {}: CRL #{} cannot be used: {detail}", path.display(), index + 1)
            }
            TlsError::SystemRoots { detail } => {
                write!(f, "TLS: no system root certificates to verify client certificates against: {detail}")
            }
            TlsError::Config(e) => write!(f, "TLS configuration refused: {e}"),
        }
    }
}

impl std::error::Error for TlsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TlsError::Read { source, .. } => Some(source),
            TlsError::Config(e) => Some(e),
            _ => None,
        }
    }
}
