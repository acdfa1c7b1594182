//! The PROXY protocol: the parser against byte-commented fixtures of v1 and v2 headers, a table
//! of malformed ones with their reasons, randomized inputs (no panic; a header cut anywhere needs
//! more bytes; what follows a header is never taken), the trust rule, and the driver with real
//! loopback sockets (TCP and TLS: the header before the handshake; refused, untrusted and timed
//! out connections reported and never opened).

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use spindle_core::net::proxy::{decide, parse, Cidr, Decision, Parsed, ProxyError, ProxyHeader, ProxyMode, ProxyPolicy, ProxySsl, V2_MAX};
use spindle_core::net::{local_port, reuseport_listener, Driver, EventSink, ListenOptions, EVENT_WORDS, EV_CLOSE, EV_DATA, EV_OPEN, EV_PROXY_ERROR};
use spindle_core::tls::{TlsEndpoint, TlsSettings};

const SIG: &[u8] = b"\r\n\r\n\0\r\nQUIT\n";

fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A v2 header: signature, version/command, family, length, then `body`.
fn v2(ver_cmd: u8, fam: u8, body: &[u8]) -> Vec<u8> {
    let mut h = SIG.to_vec();
    h.push(ver_cmd);
    h.push(fam);
    h.extend_from_slice(&(body.len() as u16).to_be_bytes());
    h.extend_from_slice(body);
    h
}

/// An AF_INET address block: 10.1.2.3:4444 -> 10.9.9.9:1883.
fn inet_block() -> Vec<u8> {
    let mut b = vec![10, 1, 2, 3, 10, 9, 9, 9];
    b.extend_from_slice(&4444u16.to_be_bytes());
    b.extend_from_slice(&1883u16.to_be_bytes());
    b
}

fn tlv(kind: u8, value: &[u8]) -> Vec<u8> {
    let mut t = vec![kind];
    t.extend_from_slice(&(value.len() as u16).to_be_bytes());
    t.extend_from_slice(value);
    t
}

/// PP2_TYPE_SSL: client flags, verify, then sub-TLVs.
fn ssl_tlv(client: u8, verify: u32, subs: &[u8]) -> Vec<u8> {
    let mut v = vec![client];
    v.extend_from_slice(&verify.to_be_bytes());
    v.extend_from_slice(subs);
    tlv(0x20, &v)
}

fn header(source: Option<&str>, destination: Option<&str>, version: u8) -> ProxyHeader {
    ProxyHeader { version, source: source.map(sa), destination: destination.map(sa), authority: None, ssl: None }
}

// ---------------------------------------------------------------------------------------------
// Fixtures

#[test]
fn v1_fixtures() {
    let cases: Vec<(&[u8], ProxyHeader)> = vec![
        (b"PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n", header(Some("192.168.0.1:56324"), Some("192.168.0.11:443"), 1)),
        (b"PROXY TCP6 2001:db8::1 ::1 65535 0\r\n", header(Some("[2001:db8::1]:65535"), Some("[::1]:0"), 1)),
        // UNKNOWN: the rest of the line is ignored; the connection keeps its real addresses.
        (b"PROXY UNKNOWN\r\n", header(None, None, 1)),
        (b"PROXY UNKNOWN ffff:f...f:ffff ffff:f...f:ffff 65535 65535\r\n", header(None, None, 1)),
    ];
    for (bytes, want) in cases {
        let mut input = bytes.to_vec();
        input.extend_from_slice(b"\x10\x0c"); // a CONNECT's first bytes follow
        assert_eq!(parse(&input), Parsed::Header(want, bytes.len()), "{}", String::from_utf8_lossy(bytes));
    }
    // The longest line: 107 bytes, CRLF included.
    let mut longest = b"PROXY UNKNOWN ".to_vec();
    longest.resize(105, b'x');
    longest.extend_from_slice(b"\r\n");
    assert_eq!(longest.len(), 107);
    assert_eq!(parse(&longest), Parsed::Header(header(None, None, 1), 107));
}

#[test]
fn v2_fixtures() {
    // PROXY over TCP/IPv4: 0x21 (v2, PROXY), 0x11 (AF_INET, STREAM), 12 bytes of addresses.
    let h = v2(0x21, 0x11, &inet_block());
    assert_eq!(parse(&h), Parsed::Header(header(Some("10.1.2.3:4444"), Some("10.9.9.9:1883"), 2), 28));

    // TCP/IPv6: 0x21 (AF_INET6, STREAM), 36 bytes: source ::ffff:..., destination fd00::1.
    let mut b6 = Vec::new();
    b6.extend_from_slice(&"2001:db8::7".parse::<std::net::Ipv6Addr>().unwrap().octets());
    b6.extend_from_slice(&"fd00::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
    b6.extend_from_slice(&50000u16.to_be_bytes());
    b6.extend_from_slice(&8883u16.to_be_bytes());
    let h = v2(0x21, 0x21, &b6);
    assert_eq!(parse(&h), Parsed::Header(header(Some("[2001:db8::7]:50000"), Some("[fd00::1]:8883"), 2), 52));

    // LOCAL (0x20): a balancer's health check; whatever the family, no client, all skipped.
    let h = v2(0x20, 0x11, &inet_block());
    assert_eq!(parse(&h), Parsed::Header(header(None, None, 2), 28));
    let h = v2(0x20, 0x00, &[]);
    assert_eq!(parse(&h), Parsed::Header(header(None, None, 2), 16));
    // PROXY with AF_UNSPEC (0x00): no address to use.
    let h = v2(0x21, 0x00, &[1, 2, 3]);
    assert_eq!(parse(&h), Parsed::Header(header(None, None, 2), 19));
    // AF_UNIX (0x31): 216 bytes of paths, no IP address.
    let h = v2(0x21, 0x31, &[0u8; 216]);
    assert_eq!(parse(&h), Parsed::Header(header(None, None, 2), 232));

    // TLVs: ALPN (0x01, skipped), AUTHORITY (0x02: "broker.example"), NOOP (0x04, skipped), and
    // SSL (0x20): client = SSL|CERT_CONN|CERT_SESS (0x07), verify 0, sub-TLVs VERSION (0x21)
    // "TLSv1.3", CN (0x22) "device-7", CIPHER (0x23, skipped).
    let mut body = inet_block();
    body.extend(tlv(0x01, b"mqtt"));
    body.extend(tlv(0x02, b"broker.example"));
    body.extend(tlv(0x04, &[0, 0, 0]));
    let mut subs = tlv(0x21, b"TLSv1.3");
    subs.extend(tlv(0x22, b"device-7"));
    subs.extend(tlv(0x23, b"TLS_AES_256_GCM_SHA384"));
    body.extend(ssl_tlv(0x07, 0, &subs));
    let h = v2(0x21, 0x11, &body);
    let Parsed::Header(got, len) = parse(&h) else { panic!("not a header") };
    assert_eq!(len, h.len());
    assert_eq!(got.source, Some(sa("10.1.2.3:4444")));
    assert_eq!(got.authority.as_deref(), Some("broker.example"));
    let ssl = got.ssl.unwrap();
    assert_eq!(ssl, ProxySsl { client: 7, verify: 0, version: Some("TLSv1.3".into()), cn: Some("device-7".into()) });
    assert_eq!(ssl.verified_cn(), Some("device-7"));
}

#[test]
fn ssl_verified_only_with_a_certificate_that_verified() {
    let cn = |client: u8, verify: u32| ProxySsl { client, verify, version: None, cn: Some("c".into()) }.verified_cn().map(str::to_owned);
    assert_eq!(cn(0x01 | 0x02, 0), Some("c".into())); // on this connection
    assert_eq!(cn(0x01 | 0x04, 0), Some("c".into())); // on its TLS session (resumed)
    assert_eq!(cn(0x01, 0), None); // no certificate presented
    assert_eq!(cn(0x01 | 0x02, 1), None); // presented, did not verify
    assert_eq!(cn(0x02, 0), None); // not TLS
}

#[test]
fn tlv_values_that_are_not_text_are_not_given() {
    let mut body = inet_block();
    body.extend(tlv(0x02, &[0xff, 0xfe]));
    body.extend(ssl_tlv(0x03, 0, &tlv(0x22, b"dev\nice")));
    let Parsed::Header(h, _) = parse(&v2(0x21, 0x11, &body)) else { panic!() };
    assert_eq!(h.authority, None);
    assert_eq!(h.ssl.unwrap().cn, None);
}

#[test]
fn not_a_header() {
    // An MQTT CONNECT, TLS ClientHello, HTTP: decided on the first byte.
    for first in [&b"\x10\x0c\x00\x04MQTT"[..], b"\x16\x03\x01", b"GET / HTTP/1.1\r\n", b"PROXZ", b"\r\n\r\n\0\r\nQUIX"] {
        assert_eq!(parse(first), Parsed::NotProxy, "{first:?}");
    }
    // A prefix of a signature: more bytes needed.
    for prefix in [&b""[..], b"P", b"PROXY", b"\r\n\r\n\0\r\nQUIT", b"\r\n\r\n\0\r\nQUIT\n\x21\x11\x00"] {
        assert_eq!(parse(prefix), Parsed::NeedMore, "{prefix:?}");
    }
}

#[test]
fn malformed_headers() {
    let mut too_long = b"PROXY UNKNOWN ".to_vec();
    too_long.resize(106, b'x');
    too_long.extend_from_slice(b"\r\n"); // 108 bytes
    let mut no_crlf = b"PROXY TCP4 ".to_vec();
    no_crlf.resize(120, b'1');
    let cases: Vec<(&str, Vec<u8>, ProxyError)> = vec![
        ("v1: line over 107 bytes", too_long, ProxyError::Malformed),
        ("v1: no CRLF within 107 bytes", no_crlf, ProxyError::Malformed),
        ("v1: CR without LF", b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX".to_vec(), ProxyError::Malformed),
        ("v1: unknown protocol", b"PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n".to_vec(), ProxyError::Malformed),
        ("v1: missing port", b"PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n".to_vec(), ProxyError::Malformed),
        ("v1: two spaces", b"PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n".to_vec(), ProxyError::Malformed),
        ("v1: IPv6 under TCP4", b"PROXY TCP4 ::1 ::1 1 2\r\n".to_vec(), ProxyError::Malformed),
        ("v1: IPv4 under TCP6", b"PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n".to_vec(), ProxyError::Malformed),
        ("v1: octet over 255", b"PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n".to_vec(), ProxyError::Malformed),
        ("v1: port over 65535", b"PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n".to_vec(), ProxyError::Malformed),
        ("v1: port with a leading zero", b"PROXY TCP4 1.2.3.4 5.6.7.8 0443 2\r\n".to_vec(), ProxyError::Malformed),
        ("v1: signed port", b"PROXY TCP4 1.2.3.4 5.6.7.8 +1 2\r\n".to_vec(), ProxyError::Malformed),
        ("v1: not UTF-8", b"PROXY TCP4 \xff 5.6.7.8 1 2\r\n".to_vec(), ProxyError::Malformed),
        ("v2: version 1 in the high nibble", v2(0x11, 0x11, &inet_block()), ProxyError::Malformed),
        ("v2: command 2", v2(0x22, 0x11, &inet_block()), ProxyError::Malformed),
        ("v2: AF_INET over DGRAM", v2(0x21, 0x12, &inet_block()), ProxyError::Malformed),
        ("v2: AF_INET, transport unspecified", v2(0x21, 0x10, &inet_block()), ProxyError::Malformed),
        ("v2: family 4", v2(0x21, 0x41, &inet_block()), ProxyError::Malformed),
        ("v2: AF_INET, 11 address bytes", v2(0x21, 0x11, &inet_block()[..11]), ProxyError::Malformed),
        ("v2: AF_INET6, 12 address bytes", v2(0x21, 0x21, &inet_block()), ProxyError::Malformed),
        ("v2: a TLV cut in its header", v2(0x21, 0x11, &[inet_block(), vec![0x02, 0x00]].concat()), ProxyError::Malformed),
        ("v2: a TLV longer than the header", v2(0x21, 0x11, &[inet_block(), vec![0x02, 0x00, 0x09, b'a']].concat()), ProxyError::Malformed),
        ("v2: SSL TLV under 5 bytes", v2(0x21, 0x11, &[inet_block(), tlv(0x20, &[1, 0, 0])].concat()), ProxyError::Malformed),
        ("v2: SSL sub-TLV past its TLV", v2(0x21, 0x11, &[inet_block(), tlv(0x20, &[1, 0, 0, 0, 0, 0x22, 0, 5, b'x'])].concat()), ProxyError::Malformed),
        ("v2: longer than 4096 bytes", v2(0x21, 0x11, &vec![0u8; V2_MAX - 15]), ProxyError::TooLarge),
    ];
    for (what, bytes, reason) in cases {
        assert_eq!(parse(&bytes), Parsed::Invalid(reason), "{what}");
    }
    // The longest v2 header accepted: 4096 bytes (12 of addresses and a NOOP TLV).
    let mut body = inet_block();
    body.extend(tlv(0x04, &vec![0u8; V2_MAX - 16 - 12 - 3]));
    let h = v2(0x21, 0x11, &body);
    assert_eq!(h.len(), V2_MAX);
    assert!(matches!(parse(&h), Parsed::Header(_, V2_MAX)));
}

// ---------------------------------------------------------------------------------------------
// Randomized

fn valid_header() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<[u8; 4]>(), any::<u16>(), any::<u16>()).prop_map(|(s, d, sp, dp)| {
            format!("PROXY TCP4 {} {} {sp} {dp}\r\n", std::net::Ipv4Addr::from(s), std::net::Ipv4Addr::from(d)).into_bytes()
        }),
        (any::<[u8; 16]>(), any::<[u8; 16]>(), any::<u16>(), any::<u16>()).prop_map(|(s, d, sp, dp)| {
            format!("PROXY TCP6 {} {} {sp} {dp}\r\n", std::net::Ipv6Addr::from(s), std::net::Ipv6Addr::from(d)).into_bytes()
        }),
        (any::<[u8; 12]>(), proptest::collection::vec((any::<u8>(), proptest::collection::vec(any::<u8>(), 0..40)), 0..6)).prop_map(|(addr, tlvs)| {
            let mut body = addr.to_vec();
            for (k, v) in tlvs {
                // Any type but SSL (whose value has a structure of its own).
                body.extend(tlv(if k == 0x20 { 0x21 } else { k }, &v));
            }
            v2(0x21, 0x11, &body)
        }),
        proptest::collection::vec(any::<u8>(), 0..64).prop_map(|junk| v2(0x20, 0x00, &junk)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse(&bytes);
        let mut signed = SIG.to_vec();
        signed.extend_from_slice(&bytes);
        let _ = parse(&signed);
        let mut text = b"PROXY ".to_vec();
        text.extend_from_slice(&bytes);
        let _ = parse(&text);
    }

    #[test]
    fn a_header_cut_anywhere_needs_more_and_what_follows_is_not_taken(h in valid_header(), tail in proptest::collection::vec(any::<u8>(), 0..100), cut in any::<prop::sample::Index>()) {
        let k = cut.index(h.len());
        prop_assert_eq!(parse(&h[..k]), Parsed::NeedMore);
        let mut whole = h.clone();
        whole.extend_from_slice(&tail);
        match parse(&whole) {
            Parsed::Header(_, len) => prop_assert_eq!(len, h.len()),
            other => prop_assert!(false, "{:?}", other),
        }
    }

    #[test]
    fn one_byte_changed_never_panics(h in valid_header(), at in any::<prop::sample::Index>(), b in any::<u8>()) {
        let mut m = h.clone();
        let i = at.index(m.len());
        m[i] = b;
        let _ = parse(&m);
    }
}

// ---------------------------------------------------------------------------------------------
// Trust

fn policy(mode: ProxyMode, trusted: &[&str]) -> ProxyPolicy {
    ProxyPolicy { mode, trusted: trusted.iter().map(|t| Cidr::parse(t).unwrap()).collect(), timeout_ms: 10_000 }
}

#[test]
fn the_trust_rule() {
    let hdr = b"PROXY TCP4 10.1.2.3 10.0.0.1 5 6\r\n\x10";
    let mqtt = b"\x10\x0c";
    for mode in [ProxyMode::Optional, ProxyMode::Required] {
        let p = policy(mode, &["127.0.0.1/32"]);
        assert!(matches!(decide(&p, true, hdr), Decision::Open(Some(_), 34)), "{mode:?}");
        // From outside the trusted blocks a header is refused (even a broken one).
        assert_eq!(decide(&p, false, hdr), Decision::Refuse(ProxyError::Untrusted));
        assert_eq!(decide(&p, false, b"PROXY bogus\r\n"), Decision::Refuse(ProxyError::Untrusted));
        assert_eq!(decide(&p, true, b"PROXY bogus\r\n"), Decision::Refuse(ProxyError::Malformed));
        assert_eq!(decide(&p, true, b"PROX"), Decision::Wait);
    }
    // No header: a direct client under 'optional' (trusted or not), refused under 'required'.
    let optional = policy(ProxyMode::Optional, &["127.0.0.1/32"]);
    assert_eq!(decide(&optional, true, mqtt), Decision::Open(None, 0));
    assert_eq!(decide(&optional, false, mqtt), Decision::Open(None, 0));
    let required = policy(ProxyMode::Required, &["127.0.0.1/32"]);
    assert_eq!(decide(&required, true, mqtt), Decision::Refuse(ProxyError::Missing));
    assert!(required.refuse_at_accept(false));
    assert!(!optional.refuse_at_accept(false));
    assert!(required.trusts("127.0.0.1".parse::<IpAddr>().unwrap()));
    assert!(!required.trusts("127.0.0.2".parse::<IpAddr>().unwrap()));
}

// ---------------------------------------------------------------------------------------------
// The driver, over loopback

#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Open(u32, u32, u16),
    Data(u32, Vec<u8>),
    Close(u32),
    ProxyError(u32),
}

struct Harness {
    driver: Driver,
    port: u16,
    table: Vec<u32>,
    data: Vec<u8>,
    backlog: std::collections::VecDeque<Ev>,
}

impl Harness {
    fn new(policy: ProxyPolicy, tls: Option<Arc<TlsEndpoint>>) -> Self {
        let fd = reuseport_listener("127.0.0.1", 0, 128, false).unwrap();
        let port = local_port(fd).unwrap();
        let mut driver = Driver::new().unwrap();
        let n = driver.listen(fd, ListenOptions { no_delay: true, keep_alive_secs: None }, tls).unwrap();
        assert!(driver.set_proxy(n, Some(policy)));
        Harness { driver, port, table: vec![0; 64 * EVENT_WORDS], data: Vec::new(), backlog: Default::default() }
    }

    fn turn(&mut self) -> Vec<Ev> {
        let mut sink = EventSink::new(&mut self.table, std::mem::take(&mut self.data), 1 << 20);
        self.driver.turn(&mut sink);
        let n = sink.count();
        let data = sink.into_data();
        let mut out = Vec::new();
        for i in 0..n {
            let r = &self.table[i * EVENT_WORDS..(i + 1) * EVENT_WORDS];
            out.push(match r[0] {
                EV_OPEN => Ev::Open(r[1], r[3], (r[2] >> 16) as u16),
                EV_DATA => Ev::Data(r[1], data[r[2] as usize..(r[2] + r[3]) as usize].to_vec()),
                EV_CLOSE => Ev::Close(r[1]),
                EV_PROXY_ERROR => Ev::ProxyError(r[2]),
                k => panic!("unexpected event {k}"),
            });
        }
        self.data = data;
        out
    }

    /// Turns until `pick` takes an event; the events before it are dropped, those after it kept
    /// for the next call.
    fn until<T>(&mut self, mut pick: impl FnMut(&Ev) -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if self.backlog.is_empty() {
                self.backlog = self.turn().into();
            }
            while let Some(e) = self.backlog.pop_front() {
                if let Some(t) = pick(&e) {
                    return t;
                }
            }
            assert!(Instant::now() < deadline, "event did not come");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Turns for a while and answers everything that happened.
    fn settle(&mut self, ms: u64) -> Vec<Ev> {
        let mut all: Vec<Ev> = self.backlog.drain(..).collect();
        let end = Instant::now() + Duration::from_millis(ms);
        while Instant::now() < end {
            all.extend(self.turn());
            std::thread::sleep(Duration::from_millis(2));
        }
        all
    }

    fn connect_from(&self, local: &str) -> TcpStream {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        s.bind(&sa(&format!("{local}:0")).into()).unwrap();
        s.connect(&sa(&format!("127.0.0.1:{}", self.port)).into()).unwrap();
        s.into()
    }
}

const IP_10_1_2_3: u32 = 0x0a01_0203;

#[test]
fn tcp_header_then_data_in_one_segment() {
    let mut h = Harness::new(policy(ProxyMode::Required, &["127.0.0.0/8"]), None);
    let mut c = h.connect_from("127.0.0.1");
    c.write_all(b"PROXY TCP4 10.1.2.3 10.0.0.1 4444 1883\r\nhello").unwrap();
    let mut seen = Vec::new();
    h.until(|e| {
        seen.push(e.clone());
        matches!(e, Ev::Data(..)).then_some(())
    });
    let Ev::Open(id, ip, port) = seen[0] else { panic!("{seen:?}") };
    assert_eq!((ip, port), (IP_10_1_2_3, 4444));
    assert_eq!(seen[1], Ev::Data(id, b"hello".to_vec()));
    assert_eq!(h.driver.peer(id).unwrap(), sa("10.1.2.3:4444"));
    let (balancer, hdr) = h.driver.proxied(id).unwrap();
    assert_eq!(balancer.ip().to_string(), "127.0.0.1");
    assert_eq!(hdr.version, 1);
    // Later bytes come as usual.
    c.write_all(b" again").unwrap();
    assert_eq!(h.until(|e| if let Ev::Data(_, d) = e { Some(d.clone()) } else { None }), b" again");
}

#[test]
fn v2_header_byte_by_byte() {
    let mut h = Harness::new(policy(ProxyMode::Required, &["127.0.0.1"]), None);
    let mut c = h.connect_from("127.0.0.1");
    let mut body = inet_block();
    body.extend(tlv(0x02, b"sni.example"));
    let hdr = v2(0x21, 0x11, &body);
    let (last, most) = hdr.split_last().unwrap();
    for b in most {
        c.write_all(&[*b]).unwrap();
        assert!(!h.settle(2).iter().any(|e| matches!(e, Ev::Open(..) | Ev::ProxyError(_))), "decided before the header was whole");
    }
    c.write_all(&[*last]).unwrap();
    c.write_all(b"mqtt").unwrap();
    let id = h.until(|e| if let Ev::Open(id, IP_10_1_2_3, 4444) = e { Some(*id) } else { None });
    assert_eq!(h.until(|e| if let Ev::Data(i, d) = e { Some((*i, d.clone())) } else { None }), (id, b"mqtt".to_vec()));
    assert_eq!(h.driver.proxied(id).unwrap().1.authority.as_deref(), Some("sni.example"));
}

#[test]
fn refused_connections_are_reported_and_never_opened() {
    // 'required': no header from a trusted source; a header from an untrusted one; any
    // connection from an untrusted one (refused at accept); a malformed header; a v2 header too
    // large; a header cut by the peer's close.
    let mut h = Harness::new(policy(ProxyMode::Required, &["127.0.0.1"]), None);
    let cases: Vec<(&str, &[u8], bool, ProxyError)> = vec![
        ("127.0.0.1", b"\x10\x0c\x00\x04MQTT", false, ProxyError::Missing),
        ("127.0.0.2", b"PROXY TCP4 10.1.2.3 10.0.0.1 1 2\r\n", false, ProxyError::Untrusted),
        ("127.0.0.2", b"", false, ProxyError::Untrusted),
        ("127.0.0.1", b"PROXY TCP4 10.1.2.3\r\n", false, ProxyError::Malformed),
        ("127.0.0.1", b"\r\n\r\n\0\r\nQUIT\n\x21\x11\xff\xff", false, ProxyError::TooLarge),
        ("127.0.0.1", b"PROXY TCP4 10.1", true, ProxyError::Closed),
    ];
    for (from, bytes, close, reason) in cases {
        let mut c = h.connect_from(from);
        c.write_all(bytes).unwrap();
        if close {
            c.shutdown(std::net::Shutdown::Write).unwrap();
        }
        let got = h.until(|e| match e {
            Ev::ProxyError(r) => Some(*r),
            Ev::Open(..) => panic!("{from} {bytes:?} was opened"),
            _ => None,
        });
        assert_eq!(got, reason as u32, "{from} {bytes:?}");
        // The broker closed it.
        let mut buf = [0u8; 8];
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert!(matches!(c.read(&mut buf), Ok(0) | Err(_)), "{from} {bytes:?} still open");
    }
    assert_eq!(h.driver.stats.open, 0);
    // A connection that closes before sending anything (a health check) is not counted.
    drop(h.connect_from("127.0.0.1"));
    assert!(!h.settle(50).iter().any(|e| matches!(e, Ev::ProxyError(_) | Ev::Open(..))));
    assert_eq!(h.driver.stats.open, 0);
}

#[test]
fn optional_takes_direct_clients_and_refuses_untrusted_headers() {
    let mut h = Harness::new(policy(ProxyMode::Optional, &["127.0.0.1"]), None);
    // A direct client, trusted source or not: its bytes are untouched.
    for from in ["127.0.0.1", "127.0.0.2"] {
        let mut c = h.connect_from(from);
        c.write_all(b"\x10\x0c\x00\x04MQTT").unwrap();
        let (id, ip) = h.until(|e| if let Ev::Open(id, ip, _) = e { Some((*id, *ip)) } else { None });
        assert_eq!(IpAddr::from(ip.to_be_bytes()).to_string(), from);
        assert!(h.driver.proxied(id).is_none());
        assert_eq!(h.until(|e| if let Ev::Data(_, d) = e { Some(d.clone()) } else { None }), b"\x10\x0c\x00\x04MQTT");
    }
    // A header from an untrusted source is refused.
    let mut c = h.connect_from("127.0.0.2");
    c.write_all(b"PROXY TCP4 10.1.2.3 10.0.0.1 1 2\r\n").unwrap();
    assert_eq!(h.until(|e| if let Ev::ProxyError(r) = e { Some(*r) } else { None }), ProxyError::Untrusted as u32);
    // LOCAL from the balancer (a health check): opened with the real address.
    let mut c = h.connect_from("127.0.0.1");
    c.write_all(&v2(0x20, 0x00, &[])).unwrap();
    c.write_all(b"x").unwrap();
    let (id, ip) = h.until(|e| if let Ev::Open(id, ip, _) = e { Some((*id, *ip)) } else { None });
    assert_eq!(ip, 0x7f00_0001);
    assert!(h.driver.proxied(id).is_none());
}

#[test]
fn a_header_not_decided_in_time_is_closed_as_a_timeout() {
    let mut p = policy(ProxyMode::Required, &["127.0.0.1"]);
    p.timeout_ms = 50;
    let mut h = Harness::new(p, None);
    let mut c = h.connect_from("127.0.0.1");
    c.write_all(b"PROXY TCP4").unwrap();
    h.settle(20);
    assert_eq!(h.driver.header_waits(), 1);
    assert_eq!(h.driver.expire_headers(Instant::now()), 0, "not yet");
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(h.driver.expire_headers(Instant::now()), 1);
    assert_eq!(h.turn(), vec![Ev::ProxyError(ProxyError::Timeout as u32)]);
    assert_eq!(h.driver.header_waits(), 0);
    assert_eq!(h.driver.stats.open, 0);
    let mut buf = [0u8; 4];
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert!(matches!(c.read(&mut buf), Ok(0) | Err(_)));
}

#[test]
fn unlisten_closes_the_connections_still_reading_their_header() {
    let mut h = Harness::new(policy(ProxyMode::Required, &["127.0.0.1"]), None);
    let mut waiting = h.connect_from("127.0.0.1");
    waiting.write_all(b"PROXY TCP4 10.").unwrap();
    let mut opened = h.connect_from("127.0.0.1");
    opened.write_all(b"PROXY TCP4 10.1.2.3 10.0.0.1 4444 1883\r\n").unwrap();
    let id = h.until(|e| if let Ev::Open(id, ..) = e { Some(*id) } else { None });
    h.settle(20);
    assert_eq!(h.driver.header_waits(), 1);
    h.driver.unlisten(0);
    assert_eq!(h.driver.header_waits(), 0);
    assert_eq!(h.driver.stats.open, 1, "the opened connection stays");
    assert!(h.driver.peer(id).is_some());
    let mut buf = [0u8; 4];
    waiting.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert!(matches!(waiting.read(&mut buf), Ok(0) | Err(_)), "the waiting one is closed");
    assert!(!h.settle(20).iter().any(|e| matches!(e, Ev::ProxyError(_) | Ev::Close(_))), "and not reported");
    drop(opened);
}

#[test]
fn an_ipv6_client_named_by_the_header() {
    let mut h = Harness::new(policy(ProxyMode::Required, &["127.0.0.1"]), None);
    let mut c = h.connect_from("127.0.0.1");
    c.write_all(b"PROXY TCP6 2001:db8::5 ::1 40000 1883\r\n").unwrap();
    let (id, ip) = h.until(|e| if let Ev::Open(id, ip, 40000) = e { Some((*id, *ip)) } else { None });
    assert_eq!(ip, 0, "the address word is 0 for IPv6: asked with peer()");
    assert_eq!(h.driver.peer(id).unwrap().ip().to_string(), "2001:db8::5");
}

// TLS: the header comes before the ClientHello (in the same segment here), and the handshake
// completes over what followed it.

struct Files(PathBuf);

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tls_endpoint() -> (Arc<TlsEndpoint>, rustls::pki_types::CertificateDer<'static>, Files) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap().self_signed(&key).unwrap();
    let dir = std::env::temp_dir().join(format!("spindle-proxy-tls-{}-{:?}", std::process::id(), std::thread::current().id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("c.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("k.pem"), key.serialize_pem()).unwrap();
    let settings = TlsSettings { cert: dir.join("c.pem"), key: dir.join("k.pem"), ca: None, request_cert: false, reject_unauthorized: false, crl: None };
    (Arc::new(TlsEndpoint::load(&settings).unwrap()), cert.der().clone(), Files(dir))
}

#[test]
fn tls_header_before_the_handshake() {
    let (endpoint, cert, _files) = tls_endpoint();
    let mut h = Harness::new(policy(ProxyMode::Required, &["127.0.0.1"]), Some(endpoint));
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let config = Arc::new(rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider())).with_safe_default_protocol_versions().unwrap().with_root_certificates(roots).with_no_client_auth());
    let mut client = rustls::ClientConnection::new(config, "localhost".try_into().unwrap()).unwrap();
    let mut sock = h.connect_from("127.0.0.1");
    // The header and the ClientHello in one write: the driver must hand the rest to rustls.
    let mut first = b"PROXY TCP4 10.1.2.3 10.0.0.1 4444 8883\r\n".to_vec();
    client.write_tls(&mut first).unwrap();
    sock.write_all(&first).unwrap();
    sock.set_nonblocking(true).unwrap();
    client.writer().write_all(b"over tls").unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut opened = None;
    let mut got = Vec::new();
    while got != b"over tls" {
        assert!(Instant::now() < deadline, "no plaintext: {opened:?} {got:?}");
        for e in h.turn() {
            match e {
                Ev::Open(id, ip, port) => opened = Some((id, ip, port)),
                Ev::Data(_, d) => got.extend(d),
                other => panic!("{other:?}"),
            }
        }
        while client.wants_write() {
            let mut out = Vec::new();
            client.write_tls(&mut out).unwrap();
            sock.write_all(&out).unwrap();
        }
        let mut buf = [0u8; 16384];
        match sock.read(&mut buf) {
            Ok(0) => panic!("closed"),
            Ok(n) => {
                client.read_tls(&mut &buf[..n]).unwrap();
                client.process_new_packets().unwrap();
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("{e}"),
        }
    }
    let (id, ip, port) = opened.unwrap();
    assert_eq!((ip, port), (IP_10_1_2_3, 4444));
    assert!(h.driver.proxied(id).is_some());
}
