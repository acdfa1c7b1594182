//! Heap bytes of an idle TLS connection (spindle_core::tls): a counting global allocator, many
//! server connections handshaken in memory, then dropped; what the drop gives back, per
//! connection, is what an idle ServerConnection holds. One test in this binary so nothing else
//! allocates meanwhile. `cargo test -p spindle-core --test tls_memory -- --nocapture` prints it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConnection, SupportedProtocolVersion};
use spindle_core::tls::{TlsEndpoint, TlsSettings};

struct Counting;

static BYTES: AtomicIsize = AtomicIsize::new(0);
static BLOCKS: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
            BLOCKS.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
            BLOCKS.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        BLOCKS.fetch_sub(1, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            BYTES.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> (isize, isize) {
    (BYTES.load(Ordering::Relaxed), BLOCKS.load(Ordering::Relaxed))
}

fn pump(c: &mut ClientConnection, s: &mut ServerConnection) {
    loop {
        let mut moved = false;
        let mut buf = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut buf).unwrap();
        }
        if !buf.is_empty() {
            moved = true;
            let mut rd = &buf[..];
            while !rd.is_empty() {
                s.read_tls(&mut rd).unwrap();
                s.process_new_packets().unwrap();
            }
        }
        let mut buf = Vec::new();
        while s.wants_write() {
            s.write_tls(&mut buf).unwrap();
        }
        if !buf.is_empty() {
            moved = true;
            let mut rd = &buf[..];
            while !rd.is_empty() {
                c.read_tls(&mut rd).unwrap();
                c.process_new_packets().unwrap();
            }
        }
        if !moved {
            return;
        }
    }
}

/// Sends `n` bytes each way, in pieces of at most 8 KiB, and reads them all.
fn exchange(c: &mut ClientConnection, s: &mut ServerConnection, n: usize) {
    let piece = vec![7u8; n.min(8192)];
    let mut got = vec![0u8; piece.len()];
    let mut left = n;
    while left > 0 {
        let k = left.min(piece.len());
        c.writer().write_all(&piece[..k]).unwrap();
        pump(c, s);
        s.reader().read_exact(&mut got[..k]).unwrap();
        s.writer().write_all(&piece[..k]).unwrap();
        pump(c, s);
        c.reader().read_exact(&mut got[..k]).unwrap();
        left -= k;
    }
}

struct Case {
    name: &'static str,
    endpoint: TlsEndpoint,
    client: Arc<ClientConfig>,
    /// Bytes each way after the handshake, then bytes each way after that (0: nothing).
    traffic: usize,
    then: usize,
}

const N: usize = 500;

/// Heap bytes and blocks one idle server connection holds, averaged over N.
fn measure(case: &Case) -> (f64, f64) {
    let mut servers = Vec::with_capacity(N);
    for _ in 0..N {
        let mut c = ClientConnection::new(case.client.clone(), ServerName::try_from("localhost").unwrap()).unwrap();
        let mut s = case.endpoint.new_connection().unwrap();
        pump(&mut c, &mut s);
        assert!(!s.is_handshaking());
        exchange(&mut c, &mut s, case.traffic);
        exchange(&mut c, &mut s, case.then);
        servers.push(s);
    }
    let (bytes, blocks) = live();
    drop(servers);
    let (after_bytes, after_blocks) = live();
    // The Vec of the connections themselves is not heap held by them.
    let vec_bytes = (N * std::mem::size_of::<ServerConnection>()) as isize;
    (
        (bytes - after_bytes - vec_bytes) as f64 / N as f64,
        (blocks - after_blocks - 1) as f64 / N as f64,
    )
}

#[test]
fn idle_server_connection_heap() {
    let dir = std::env::temp_dir().join(format!("spindle-tls-mem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "Mem CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let ca = Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate().unwrap();
    let server_cert = CertificateParams::new(vec!["localhost".to_owned()]).unwrap().signed_by(&server_key, &ca).unwrap();
    let client_key = KeyPair::generate().unwrap();
    let mut client_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    client_params.distinguished_name.push(DnType::CommonName, "device-000001");
    client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_cert = client_params.signed_by(&client_key, &ca).unwrap();

    std::fs::write(dir.join("server.pem"), server_cert.pem()).unwrap();
    std::fs::write(dir.join("server.key"), server_key.serialize_pem()).unwrap();
    std::fs::write(dir.join("ca.pem"), ca_cert.pem()).unwrap();
    let settings = |request_cert| TlsSettings {
        cert: dir.join("server.pem"),
        key: dir.join("server.key"),
        ca: Some(dir.join("ca.pem")),
        request_cert,
        reject_unauthorized: true,
        crl: None,
    };
    let plain = TlsEndpoint::load(&settings(false)).unwrap();
    let mtls = TlsEndpoint::load(&settings(true)).unwrap();

    let client = |versions: &[&'static SupportedProtocolVersion], with_cert: bool| {
        let mut roots = RootCertStore::empty();
        roots.add(ca_cert.der().clone()).unwrap();
        let b = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots);
        Arc::new(if with_cert {
            let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(client_key.serialize_der()));
            b.with_client_auth_cert(vec![CertificateDer::from(client_cert.der().to_vec())], key).unwrap()
        } else {
            b.with_no_client_auth()
        })
    };
    let tls13 = &[&rustls::version::TLS13][..];
    let tls12 = &[&rustls::version::TLS12][..];
    let cases = [
        Case { name: "TLS 1.3, no client cert, 100 B each way", endpoint: plain.clone(), client: client(tls13, false), traffic: 100, then: 0 },
        Case { name: "TLS 1.3, client cert, 100 B each way", endpoint: mtls.clone(), client: client(tls13, true), traffic: 100, then: 0 },
        Case { name: "TLS 1.2, no client cert, 100 B each way", endpoint: plain.clone(), client: client(tls12, false), traffic: 100, then: 0 },
        Case { name: "TLS 1.2, client cert, 100 B each way", endpoint: mtls.clone(), client: client(tls12, true), traffic: 100, then: 0 },
        Case { name: "TLS 1.3, no client cert, 64 KiB each way", endpoint: plain.clone(), client: client(tls13, false), traffic: 64 * 1024, then: 0 },
        Case { name: "TLS 1.3, no client cert, 64 KiB, then 100 B", endpoint: plain.clone(), client: client(tls13, false), traffic: 64 * 1024, then: 100 },
        Case { name: "TLS 1.3, no client cert, handshake only", endpoint: plain.clone(), client: client(tls13, false), traffic: 0, then: 0 },
    ];

    println!("size_of::<ServerConnection>() = {} bytes (inline, wherever the connection lives)", std::mem::size_of::<ServerConnection>());
    // What a loaded endpoint holds: the config, and the session cache its TLS 1.3 tickets fill
    // (rustls' default: at most 256 sessions per config).
    let (before, _) = live();
    let fresh = TlsEndpoint::load(&settings(false)).unwrap();
    let (loaded, _) = live();
    measure(&Case { name: "", endpoint: fresh.clone(), client: client(tls13, false), traffic: 0, then: 0 });
    let (used, _) = live();
    drop(fresh);
    println!("TlsEndpoint: {} bytes loaded, {} bytes with a full session cache", loaded - before, used - before);
    let mut worst: f64 = 0.0;
    for case in &cases {
        let (bytes, blocks) = measure(case);
        println!("{:<45} heap held per idle ServerConnection: {bytes:>8.0} bytes in {blocks:>5.1} allocations", case.name);
        worst = worst.max(bytes);
    }
    let _ = std::fs::remove_dir_all(&dir);
    // A guard against a change that makes idle connections keep large buffers.
    assert!(worst < 128.0 * 1024.0, "an idle ServerConnection holds {worst} bytes");
}
