//! The few MQTT 3.1.1 (level 4) and 5.0 (level 5) packets the load generator sends and reads.
//! Encoders append to a caller's buffer; the decoder only splits frames and reads the fields the
//! scenarios need. Standalone on purpose: the generator shares no code with the broker it measures.

pub const V4: u8 = 4;
pub const V5: u8 = 5;

pub const CONNACK: u8 = 2;
pub const PUBLISH: u8 = 3;
pub const PUBACK: u8 = 4;
pub const SUBACK: u8 = 9;
pub const PINGRESP: u8 = 13;
pub const DISCONNECT: u8 = 14;

fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let mut b = (n % 128) as u8;
        n /= 128;
        if n > 0 {
            b |= 0x80;
        }
        out.push(b);
        if n == 0 {
            break;
        }
    }
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u16).to_be_bytes());
    out.extend_from_slice(s);
}

/// CONNECT with Clean Session / Clean Start set, no will, no properties, and the username and
/// password when given (flags 0x80 and 0x40; 3.1.1 allows a password only with a username).
pub fn connect(out: &mut Vec<u8>, version: u8, client_id: &[u8], keepalive: u16, username: Option<&[u8]>, password: Option<&[u8]>) {
    let props = if version == V5 { 1 } else { 0 };
    let creds = username.map_or(0, |u| 2 + u.len()) + password.map_or(0, |p| 2 + p.len());
    let rl = 10 + props + 2 + client_id.len() + creds;
    out.push(0x10);
    put_varint(out, rl);
    put_str(out, b"MQTT");
    out.push(version);
    out.push(0x02 | if username.is_some() { 0x80 } else { 0 } | if password.is_some() { 0x40 } else { 0 });
    out.extend_from_slice(&keepalive.to_be_bytes());
    if version == V5 {
        out.push(0);
    }
    put_str(out, client_id);
    // Payload order: client id, (will), username, password [MQTT-3.1.3-1].
    if let Some(u) = username {
        put_str(out, u);
    }
    if let Some(p) = password {
        put_str(out, p);
    }
}

/// SUBSCRIBE for `filters`, each at `qos` (v5: options byte = QoS, everything else default).
pub fn subscribe(out: &mut Vec<u8>, version: u8, packet_id: u16, filters: &[&[u8]], qos: u8) {
    let props = if version == V5 { 1 } else { 0 };
    let rl = 2 + props + filters.iter().map(|f| 3 + f.len()).sum::<usize>();
    out.push(0x82);
    put_varint(out, rl);
    out.extend_from_slice(&packet_id.to_be_bytes());
    if version == V5 {
        out.push(0);
    }
    for f in filters {
        put_str(out, f);
        out.push(qos);
    }
}

/// PUBLISH; returns the offset of the packet identifier inside `out` (QoS > 0) so a template can
/// be patched, or usize::MAX for QoS 0.
pub fn publish(out: &mut Vec<u8>, version: u8, topic: &[u8], qos: u8, retain: bool, packet_id: u16, payload: &[u8]) -> usize {
    let props = if version == V5 { 1 } else { 0 };
    let id_len = if qos > 0 { 2 } else { 0 };
    let rl = 2 + topic.len() + id_len + props + payload.len();
    out.push(0x30 | (qos << 1) | retain as u8);
    put_varint(out, rl);
    put_str(out, topic);
    let mut id_at = usize::MAX;
    if qos > 0 {
        id_at = out.len();
        out.extend_from_slice(&packet_id.to_be_bytes());
    }
    if version == V5 {
        out.push(0);
    }
    out.extend_from_slice(payload);
    id_at
}

/// PUBACK with reason Success (remaining length 2 is valid in both versions).
pub fn puback(out: &mut Vec<u8>, packet_id: u16) {
    out.extend_from_slice(&[0x40, 2]);
    out.extend_from_slice(&packet_id.to_be_bytes());
}

pub fn pingreq(out: &mut Vec<u8>) {
    out.extend_from_slice(&[0xc0, 0]);
}

pub fn disconnect(out: &mut Vec<u8>) {
    out.extend_from_slice(&[0xe0, 0]);
}

/// One whole packet: its type (high nibble), flags (low nibble) and body.
pub struct Packet<'a> {
    pub kind: u8,
    pub flags: u8,
    pub body: &'a [u8],
}

pub enum Frame<'a> {
    Packet(Packet<'a>, usize),
    Incomplete,
    Malformed,
}

/// The packet at the start of `buf` and the bytes it takes, or Incomplete.
pub fn frame(buf: &[u8]) -> Frame<'_> {
    if buf.len() < 2 {
        return Frame::Incomplete;
    }
    let mut rl = 0usize;
    let mut shift = 0;
    let mut at = 1;
    loop {
        if at >= buf.len() {
            return Frame::Incomplete;
        }
        if at > 4 {
            return Frame::Malformed;
        }
        let b = buf[at];
        rl |= ((b & 0x7f) as usize) << shift;
        shift += 7;
        at += 1;
        if b & 0x80 == 0 {
            break;
        }
    }
    if buf.len() < at + rl {
        return Frame::Incomplete;
    }
    Frame::Packet(Packet { kind: buf[0] >> 4, flags: buf[0] & 0x0f, body: &buf[at..at + rl] }, at + rl)
}

fn read_varint(b: &[u8]) -> Option<(usize, usize)> {
    let mut n = 0usize;
    for (i, &x) in b.iter().enumerate().take(4) {
        n |= ((x & 0x7f) as usize) << (7 * i);
        if x & 0x80 == 0 {
            return Some((n, i + 1));
        }
    }
    None
}

/// A received PUBLISH: QoS, flags, packet id (0 for QoS 0), topic and payload.
pub struct Publish<'a> {
    pub qos: u8,
    pub retain: bool,
    pub dup: bool,
    pub packet_id: u16,
    #[cfg_attr(not(test), allow(dead_code))]
    pub topic: &'a [u8],
    pub payload: &'a [u8],
}

pub fn parse_publish<'a>(version: u8, p: &Packet<'a>) -> Option<Publish<'a>> {
    let b = p.body;
    let qos = (p.flags >> 1) & 3;
    if b.len() < 2 {
        return None;
    }
    let tl = u16::from_be_bytes([b[0], b[1]]) as usize;
    let mut at = 2 + tl;
    if b.len() < at {
        return None;
    }
    let topic = &b[2..at];
    let mut packet_id = 0;
    if qos > 0 {
        if b.len() < at + 2 {
            return None;
        }
        packet_id = u16::from_be_bytes([b[at], b[at + 1]]);
        at += 2;
    }
    if version == V5 {
        let (n, used) = read_varint(b.get(at..)?)?;
        at += used + n;
        if b.len() < at {
            return None;
        }
    }
    Some(Publish { qos, retain: p.flags & 1 != 0, dup: p.flags & 8 != 0, packet_id, topic, payload: &b[at..] })
}

/// CONNACK: (return/reason code, Receive Maximum the server announced; 65535 when absent).
pub fn parse_connack(version: u8, p: &Packet<'_>) -> Option<(u8, u16)> {
    let b = p.body;
    if b.len() < 2 {
        return None;
    }
    let code = b[1];
    let mut receive_max = 65535;
    if version == V5 && b.len() > 2 {
        let (n, used) = read_varint(&b[2..])?;
        let props = b.get(2 + used..2 + used + n)?;
        let mut i = 0;
        while i < props.len() {
            let id = props[i];
            i += 1;
            let size = match id {
                0x01 | 0x17 | 0x19 | 0x24 | 0x25 | 0x28 | 0x29 | 0x2a => 1,
                0x13 | 0x21 | 0x22 | 0x23 => 2,
                0x02 | 0x11 | 0x18 | 0x27 => 4,
                0x0b => read_varint(&props[i..])?.1,
                0x03 | 0x08 | 0x09 | 0x12 | 0x15 | 0x16 | 0x1a | 0x1c | 0x1f => {
                    2 + u16::from_be_bytes([*props.get(i)?, *props.get(i + 1)?]) as usize
                }
                0x26 => {
                    let k = 2 + u16::from_be_bytes([*props.get(i)?, *props.get(i + 1)?]) as usize;
                    k + 2 + u16::from_be_bytes([*props.get(i + k)?, *props.get(i + k + 1)?]) as usize
                }
                _ => return None,
            };
            if id == 0x21 {
                receive_max = u16::from_be_bytes([*props.get(i)?, *props.get(i + 1)?]);
            }
            i += size;
        }
    }
    Some((code, receive_max))
}

/// Packet identifier and (v5) reason code of a PUBACK or SUBACK's first return code.
pub fn parse_puback(p: &Packet<'_>) -> Option<(u16, u8)> {
    let b = p.body;
    if b.len() < 2 {
        return None;
    }
    Some((u16::from_be_bytes([b[0], b[1]]), if b.len() > 2 { b[2] } else { 0 }))
}

/// SUBACK: packet id and the return codes.
pub fn parse_suback<'a>(version: u8, p: &Packet<'a>) -> Option<(u16, &'a [u8])> {
    let b = p.body;
    if b.len() < 2 {
        return None;
    }
    let mut at = 2;
    if version == V5 {
        let (n, used) = read_varint(&b[2..])?;
        at += used + n;
    }
    Some((u16::from_be_bytes([b[0], b[1]]), b.get(at..)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_round_trip_both_versions() {
        for v in [V4, V5] {
            for qos in [0u8, 1] {
                let mut out = Vec::new();
                publish(&mut out, v, b"a/b", qos, true, 7, &[9; 200]);
                let Frame::Packet(p, used) = frame(&out) else { panic!() };
                assert_eq!(used, out.len());
                let m = parse_publish(v, &p).unwrap();
                assert_eq!((m.qos, m.retain, m.topic, m.payload.len()), (qos, true, &b"a/b"[..], 200));
                assert_eq!(m.packet_id, if qos > 0 { 7 } else { 0 });
            }
        }
    }

    #[test]
    fn connack_receive_maximum() {
        let body = [0, 0, 5, 0x21, 0x04, 0x00, 0x24, 0x01];
        let p = Packet { kind: CONNACK, flags: 0, body: &body[..] };
        assert_eq!(parse_connack(V5, &p), Some((0, 1024)));
    }

    #[test]
    fn connect_without_credentials() {
        let mut out = Vec::new();
        connect(&mut out, V4, b"c", 60, None, None);
        #[rustfmt::skip]
        let want = [
            0x10, 13,                          // CONNECT, remaining length
            0, 4, b'M', b'Q', b'T', b'T', 4,   // protocol name, level 4
            0x02,                              // flags: clean session
            0, 60,                             // keep alive
            0, 1, b'c',                        // client id
        ];
        assert_eq!(out, want);
    }

    #[test]
    fn connect_with_credentials_both_versions() {
        let mut out = Vec::new();
        connect(&mut out, V4, b"c", 60, Some(b"dev7"), Some(b"pw"));
        #[rustfmt::skip]
        let want = [
            0x10, 23,                          // CONNECT, remaining length
            0, 4, b'M', b'Q', b'T', b'T', 4,   // protocol name, level 4
            0xc2,                              // flags: username, password, clean session
            0, 60,                             // keep alive
            0, 1, b'c',                        // client id
            0, 4, b'd', b'e', b'v', b'7',      // username
            0, 2, b'p', b'w',                  // password
        ];
        assert_eq!(out, want);

        out.clear();
        connect(&mut out, V5, b"c", 60, Some(b"dev7"), Some(b"pw"));
        #[rustfmt::skip]
        let want = [
            0x10, 24,                          // CONNECT, remaining length
            0, 4, b'M', b'Q', b'T', b'T', 5,   // protocol name, level 5
            0xc2,                              // flags: username, password, clean start
            0, 60,                             // keep alive
            0,                                 // no properties
            0, 1, b'c',                        // client id
            0, 4, b'd', b'e', b'v', b'7',      // username
            0, 2, b'p', b'w',                  // password
        ];
        assert_eq!(out, want);

        // 5.0 lets a password go without a username [MQTT-3.1.2-18, 3.1.2-20].
        out.clear();
        connect(&mut out, V5, b"c", 60, None, Some(b"pw"));
        assert_eq!((out[1], out[9]), (18, 0x42));
        assert_eq!(&out[out.len() - 4..], &[0, 2, b'p', b'w']);
    }

    #[test]
    fn connack_refusal_code() {
        // 3.1.1 return code 4: bad user name or password; 5.0 reason 0x86 with no properties.
        let v4 = Packet { kind: CONNACK, flags: 0, body: &[0, 4][..] };
        assert_eq!(parse_connack(V4, &v4), Some((4, 65535)));
        let v5 = Packet { kind: CONNACK, flags: 0, body: &[0, 0x86, 0][..] };
        assert_eq!(parse_connack(V5, &v5), Some((0x86, 65535)));
    }

    #[test]
    fn incomplete_frames() {
        assert!(matches!(frame(&[0x30]), Frame::Incomplete));
        assert!(matches!(frame(&[0x30, 0x80]), Frame::Incomplete));
        assert!(matches!(frame(&[0x30, 3, 0]), Frame::Incomplete));
    }
}
