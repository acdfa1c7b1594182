//! The PROXY protocol (HAProxy's, versions 1 and 2: https://www.haproxy.org/download/2.6/doc/proxy-protocol.txt):
//! the header a load balancer sends first on a connection it opens to us, naming the client it
//! came from. A parser that never touches I/O ("need more bytes" is a status), the trust list of
//! a listener (CIDR blocks of the balancers), and the reasons a connection is refused.
//!
//! - v1: one text line, `PROXY TCP4|TCP6|UNKNOWN ...\r\n`, 107 bytes at most.
//! - v2: a 16-byte binary header (signature, version and command, family, length) and the
//!   addresses and TLVs it announces. LOCAL (a balancer's own health check) and UNSPEC carry no
//!   client: the connection keeps its real addresses. The TLVs read are PP2_TYPE_AUTHORITY (the
//!   server name the client asked the balancer for) and PP2_TYPE_SSL (the client's TLS with the
//!   balancer: its flags, the verify result and the PP2_SUBTYPE_SSL_CN / _VERSION sub-TLVs);
//!   others are skipped. PP2_TYPE_CRC32C is not checked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// v1: the longest line, CRLF included (the specification's bound).
pub const V1_MAX: usize = 107;
/// v2: the longest header accepted, the 16 fixed bytes included (addresses and TLVs). HAProxy's
/// largest with SSL TLVs is a few hundred bytes; cloud balancers add an id or two.
pub const V2_MAX: usize = 4096;
/// Bytes held for one connection while its header is read: a v2 header at most. What was read
/// past the header goes on to the connection.
pub const HEADER_READ_MAX: usize = V2_MAX;

const V1_SIGNATURE: &[u8] = b"PROXY ";
const V2_SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";

/// v2 TLV types and PP2_TYPE_SSL's flags and sub-types (section 2.2).
pub const PP2_TYPE_AUTHORITY: u8 = 0x02;
pub const PP2_TYPE_SSL: u8 = 0x20;
pub const PP2_SUBTYPE_SSL_VERSION: u8 = 0x21;
pub const PP2_SUBTYPE_SSL_CN: u8 = 0x22;
pub const PP2_CLIENT_SSL: u8 = 0x01;
pub const PP2_CLIENT_CERT_CONN: u8 = 0x02;
pub const PP2_CLIENT_CERT_SESS: u8 = 0x04;

/// What a listener does with PROXY protocol headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyMode {
    /// A trusted source may send a header; a connection whose first bytes are no header is a
    /// direct client.
    Optional,
    /// Every connection must come from a trusted source and start with a header.
    Required,
}

/// Why a connection was refused before it reached the worker (EV_PROXY_ERROR's reason word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ProxyError {
    /// 'required': the first bytes are no PROXY header.
    Missing = 1,
    /// A header that breaks the format.
    Malformed = 2,
    /// A v2 header longer than V2_MAX (a v1 line longer than V1_MAX is malformed).
    TooLarge = 3,
    /// From a source outside the trusted blocks: a header, or any connection under 'required'.
    Untrusted = 4,
    /// No decision within the listener's timeout.
    Timeout = 5,
    /// The peer closed or reset the connection in the middle of its header.
    Closed = 6,
}

/// What PP2_TYPE_SSL said of the client's TLS with the balancer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxySsl {
    /// The `client` flags: PP2_CLIENT_SSL, PP2_CLIENT_CERT_CONN, PP2_CLIENT_CERT_SESS.
    pub client: u8,
    /// 0 when the client presented a certificate and it verified.
    pub verify: u32,
    /// PP2_SUBTYPE_SSL_VERSION, e.g. "TLSv1.3".
    pub version: Option<String>,
    /// PP2_SUBTYPE_SSL_CN: the subject CN of the client certificate.
    pub cn: Option<String>,
}

impl ProxySsl {
    /// The client spoke TLS to the balancer and presented a certificate (on this connection or
    /// its TLS session) that the balancer verified.
    pub fn verified(&self) -> bool {
        self.client & PP2_CLIENT_SSL != 0 && self.client & (PP2_CLIENT_CERT_CONN | PP2_CLIENT_CERT_SESS) != 0 && self.verify == 0
    }

    /// The CN of a verified client certificate.
    pub fn verified_cn(&self) -> Option<&str> {
        if self.verified() {
            self.cn.as_deref()
        } else {
            None
        }
    }
}

/// A header as read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyHeader {
    /// 1 or 2.
    pub version: u8,
    /// The client's address; None for v2 LOCAL, UNSPEC or UNIX and v1 UNKNOWN (the connection
    /// keeps its real addresses).
    pub source: Option<SocketAddr>,
    /// The address the client connected to (the balancer's frontend).
    pub destination: Option<SocketAddr>,
    /// PP2_TYPE_AUTHORITY: the host name the client sent (TLS SNI when the balancer terminated TLS).
    pub authority: Option<String>,
    pub ssl: Option<ProxySsl>,
}

/// The result of looking at the bytes a connection sent first.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Too few bytes to decide.
    NeedMore,
    /// The bytes do not start with a PROXY signature.
    NotProxy,
    /// A complete header of `len` bytes; what follows belongs to the connection.
    Header(ProxyHeader, usize),
    Invalid(ProxyError),
}

/// Whether `buf` starts with a PROXY signature: Some(true) yes, Some(false) no, None: too short
/// to tell. An MQTT connection starts with CONNECT (0x10), never 'P' or '\r'.
pub fn detect(buf: &[u8]) -> Option<bool> {
    for sig in [V1_SIGNATURE, &V2_SIGNATURE[..]] {
        let n = buf.len().min(sig.len());
        if n > 0 && buf[..n] == sig[..n] {
            return if n == sig.len() { Some(true) } else { None };
        }
    }
    if buf.is_empty() {
        None
    } else {
        Some(false)
    }
}

/// Reads a header from the start of `buf`.
pub fn parse(buf: &[u8]) -> Parsed {
    match detect(buf) {
        None => Parsed::NeedMore,
        Some(false) => Parsed::NotProxy,
        Some(true) if buf[0] == b'P' => parse_v1(buf),
        Some(true) => parse_v2(buf),
    }
}

fn invalid(e: ProxyError) -> Parsed {
    Parsed::Invalid(e)
}

fn parse_v1(buf: &[u8]) -> Parsed {
    let window = &buf[..buf.len().min(V1_MAX)];
    let Some(cr) = window.iter().position(|&b| b == b'\r') else {
        return if buf.len() >= V1_MAX { invalid(ProxyError::Malformed) } else { Parsed::NeedMore };
    };
    // CR at 105 and LF at 106 at the latest.
    if cr + 2 > V1_MAX {
        return invalid(ProxyError::Malformed);
    }
    if cr + 1 >= buf.len() {
        return Parsed::NeedMore;
    }
    if buf[cr + 1] != b'\n' {
        return invalid(ProxyError::Malformed);
    }
    let len = cr + 2;
    let Ok(line) = std::str::from_utf8(&buf[V1_SIGNATURE.len()..cr]) else { return invalid(ProxyError::Malformed) };
    // UNKNOWN: whatever follows up to CRLF is ignored (section 2.1).
    if line == "UNKNOWN" || line.starts_with("UNKNOWN ") {
        return Parsed::Header(ProxyHeader { version: 1, ..Default::default() }, len);
    }
    let parts: Vec<&str> = line.split(' ').collect();
    if parts.len() != 5 {
        return invalid(ProxyError::Malformed);
    }
    let (src, dst) = match parts[0] {
        "TCP4" => match (parts[1].parse::<Ipv4Addr>(), parts[2].parse::<Ipv4Addr>()) {
            (Ok(s), Ok(d)) => (IpAddr::V4(s), IpAddr::V4(d)),
            _ => return invalid(ProxyError::Malformed),
        },
        "TCP6" => match (parts[1].parse::<Ipv6Addr>(), parts[2].parse::<Ipv6Addr>()) {
            (Ok(s), Ok(d)) => (IpAddr::V6(s), IpAddr::V6(d)),
            _ => return invalid(ProxyError::Malformed),
        },
        _ => return invalid(ProxyError::Malformed),
    };
    let (Some(sport), Some(dport)) = (v1_port(parts[3]), v1_port(parts[4])) else { return invalid(ProxyError::Malformed) };
    Parsed::Header(
        ProxyHeader { version: 1, source: Some(SocketAddr::new(src, sport)), destination: Some(SocketAddr::new(dst, dport)), authority: None, ssl: None },
        len,
    )
}

/// A v1 port: 1 to 5 digits, 0..65535, no sign, no leading zero (but "0" itself).
fn v1_port(s: &str) -> Option<u16> {
    if s.is_empty() || s.len() > 5 || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0')) {
        return None;
    }
    s.parse().ok()
}

fn parse_v2(buf: &[u8]) -> Parsed {
    if buf.len() < 16 {
        return Parsed::NeedMore;
    }
    let ver_cmd = buf[12];
    if ver_cmd >> 4 != 2 {
        return invalid(ProxyError::Malformed);
    }
    let local = match ver_cmd & 0x0f {
        0 => true,
        1 => false,
        _ => return invalid(ProxyError::Malformed),
    };
    let fam = buf[13];
    let body_len = u16::from_be_bytes([buf[14], buf[15]]) as usize;
    let len = 16 + body_len;
    if len > V2_MAX {
        return invalid(ProxyError::TooLarge);
    }
    if buf.len() < len {
        return Parsed::NeedMore;
    }
    let body = &buf[16..len];
    // LOCAL (a balancer's health check) and UNSPEC carry no client: the addresses and whatever
    // follows are skipped whole (section 2.2: the receiver must ignore them).
    if local || fam >> 4 == 0 {
        return Parsed::Header(ProxyHeader { version: 2, ..Default::default() }, len);
    }
    // The address block's length by family, over a stream transport (a datagram, or no
    // transport given, is not a TCP client).
    let addr_len = match (fam >> 4, fam & 0x0f) {
        (1, 1) => 12,
        (2, 1) => 36,
        (3, 1) => 216,
        _ => return invalid(ProxyError::Malformed),
    };
    if body.len() < addr_len {
        return invalid(ProxyError::Malformed);
    }
    let mut header = ProxyHeader { version: 2, ..Default::default() };
    match fam >> 4 {
        1 => {
            let s = Ipv4Addr::new(body[0], body[1], body[2], body[3]);
            let d = Ipv4Addr::new(body[4], body[5], body[6], body[7]);
            let (sp, dp) = (u16::from_be_bytes([body[8], body[9]]), u16::from_be_bytes([body[10], body[11]]));
            header.source = Some(SocketAddr::new(IpAddr::V4(s), sp));
            header.destination = Some(SocketAddr::new(IpAddr::V4(d), dp));
        }
        2 => {
            let s: [u8; 16] = body[0..16].try_into().unwrap();
            let d: [u8; 16] = body[16..32].try_into().unwrap();
            let (sp, dp) = (u16::from_be_bytes([body[32], body[33]]), u16::from_be_bytes([body[34], body[35]]));
            header.source = Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(s)), sp));
            header.destination = Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(d)), dp));
        }
        // UNIX: no IP address to use; the real one stays.
        _ => {}
    }
    match read_tlvs(&body[addr_len..], &mut header) {
        Ok(()) => Parsed::Header(header, len),
        Err(e) => invalid(e),
    }
}

/// Walks the TLVs: each `type, length (u16 BE), value`; one that runs past the end is malformed.
fn read_tlvs(mut tlvs: &[u8], header: &mut ProxyHeader) -> Result<(), ProxyError> {
    while !tlvs.is_empty() {
        let (kind, value, rest) = split_tlv(tlvs)?;
        match kind {
            PP2_TYPE_AUTHORITY => header.authority = text(value),
            PP2_TYPE_SSL => {
                if value.len() < 5 {
                    return Err(ProxyError::Malformed);
                }
                let mut ssl = ProxySsl { client: value[0], verify: u32::from_be_bytes([value[1], value[2], value[3], value[4]]), version: None, cn: None };
                let mut subs = &value[5..];
                while !subs.is_empty() {
                    let (sub, v, r) = split_tlv(subs)?;
                    match sub {
                        PP2_SUBTYPE_SSL_VERSION => ssl.version = text(v),
                        PP2_SUBTYPE_SSL_CN => ssl.cn = text(v),
                        _ => {}
                    }
                    subs = r;
                }
                header.ssl = Some(ssl);
            }
            _ => {}
        }
        tlvs = rest;
    }
    Ok(())
}

fn split_tlv(b: &[u8]) -> Result<(u8, &[u8], &[u8]), ProxyError> {
    if b.len() < 3 {
        return Err(ProxyError::Malformed);
    }
    let n = u16::from_be_bytes([b[1], b[2]]) as usize;
    if b.len() < 3 + n {
        return Err(ProxyError::Malformed);
    }
    Ok((b[0], &b[3..3 + n], &b[3 + n..]))
}

/// A TLV's text: UTF-8 without control characters, or nothing (a value that is not text is not
/// given on: an identity must never be a lossy copy).
fn text(v: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(v).ok()?;
    if s.is_empty() || s.chars().any(|c| c.is_control()) {
        return None;
    }
    Some(s.to_owned())
}

/// An address block: IPv4 blocks are kept in their IPv4-mapped IPv6 form, so a block of
/// 10.0.0.0/8 also covers the peer `::ffff:10.1.2.3` of a dual-stack listener.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    bits: u128,
    prefix: u8,
}

impl Cidr {
    /// `a.b.c.d`, `a.b.c.d/n` (0..32), an IPv6 address, or one with `/n` (0..128).
    pub fn parse(text: &str) -> Option<Cidr> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let ip: IpAddr = addr.parse().ok()?;
        let (bits, max, offset) = match ip {
            IpAddr::V4(v4) => (u128::from(v4.to_ipv6_mapped()), 32u8, 96u8),
            IpAddr::V6(v6) => (u128::from(v6), 128u8, 0u8),
        };
        let prefix = match prefix {
            None => max,
            Some(p) if !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()) => p.parse::<u8>().ok().filter(|&n| n <= max)?,
            Some(_) => return None,
        };
        let prefix = prefix + offset;
        Some(Cidr { bits: bits & mask(prefix), prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        (as_bits(ip) & mask(self.prefix)) == self.bits
    }
}

fn mask(prefix: u8) -> u128 {
    if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - prefix as u32)
    }
}

fn as_bits(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// A listener's PROXY protocol settings.
#[derive(Clone, Debug)]
pub struct ProxyPolicy {
    pub mode: ProxyMode,
    /// The balancers' addresses: only these may send a header.
    pub trusted: Vec<Cidr>,
    /// Milliseconds a connection has to send its header (or, under 'optional', its first bytes).
    pub timeout_ms: u32,
}

impl ProxyPolicy {
    pub fn trusts(&self, ip: IpAddr) -> bool {
        self.trusted.iter().any(|c| c.contains(ip))
    }
}

/// What to do with a connection's first bytes, given where it came from.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Wait for more bytes.
    Wait,
    /// Open the connection: with the header (None: no header, the real addresses), and the
    /// bytes after it (an offset into the bytes read).
    Open(Option<ProxyHeader>, usize),
    Refuse(ProxyError),
}

/// The one rule of trust: a header is taken only from a trusted source; from anywhere else it
/// refuses the connection. Without a header, 'optional' opens it as a direct client and
/// 'required' refuses it. (An untrusted source under 'required' is refused at accept, before
/// anything is read: `refuse_at_accept`.)
pub fn decide(policy: &ProxyPolicy, trusted: bool, buf: &[u8]) -> Decision {
    match parse(buf) {
        Parsed::NeedMore => Decision::Wait,
        Parsed::NotProxy => match policy.mode {
            ProxyMode::Optional => Decision::Open(None, 0),
            ProxyMode::Required => Decision::Refuse(if trusted { ProxyError::Missing } else { ProxyError::Untrusted }),
        },
        // A source outside the trusted blocks does not get to name another address, even with a
        // header that would not parse.
        _ if !trusted => Decision::Refuse(ProxyError::Untrusted),
        Parsed::Header(h, len) => Decision::Open(Some(h), len),
        Parsed::Invalid(e) => Decision::Refuse(e),
    }
}

impl ProxyPolicy {
    /// A connection refused as soon as it is accepted: under 'required', from an untrusted source.
    pub fn refuse_at_accept(&self, trusted: bool) -> bool {
        self.mode == ProxyMode::Required && !trusted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_blocks() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains("10.200.1.2".parse().unwrap()));
        assert!(c.contains("::ffff:10.1.2.3".parse().unwrap()));
        assert!(!c.contains("11.0.0.1".parse().unwrap()));
        let one = Cidr::parse("127.0.0.1").unwrap();
        assert!(one.contains("127.0.0.1".parse().unwrap()));
        assert!(!one.contains("127.0.0.2".parse().unwrap()));
        let v6 = Cidr::parse("fd00::/8").unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()));
        assert!(!v6.contains("fe80::1".parse().unwrap()));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains("8.8.8.8".parse().unwrap()));
        for bad in ["10.0.0.0/33", "::/129", "10.0.0/8", "x", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/+8"] {
            assert_eq!(Cidr::parse(bad), None, "{bad}");
        }
    }
}
