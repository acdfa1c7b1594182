//! Which reason codes each packet may carry (MQTT 5.0 sections 3.2.2.2, 3.4.2.1, 3.5.2.1, 3.6.2.1,
//! 3.7.2.1, 3.9.3, 3.11.3, 3.14.2.1, 3.15.2.1) and the v3 CONNACK return codes / SUBACK codes.

use super::packet::{PacketType, ProtocolVersion};

const CONNACK_V5: &[u8] = &[
    0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x8C, 0x90, 0x95, 0x97, 0x99,
    0x9A, 0x9B, 0x9C, 0x9D, 0x9F,
];
const CONNACK_V3: &[u8] = &[0x00, 0x01, 0x02, 0x03, 0x04, 0x05];
const PUBACK_PUBREC: &[u8] = &[0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99];
const PUBREL_PUBCOMP: &[u8] = &[0x00, 0x92];
const SUBACK_V5: &[u8] = &[0x00, 0x01, 0x02, 0x80, 0x83, 0x87, 0x8F, 0x91, 0x97, 0x9E, 0xA1, 0xA2];
const SUBACK_V3: &[u8] = &[0x00, 0x01, 0x02, 0x80];
const UNSUBACK_V5: &[u8] = &[0x00, 0x11, 0x80, 0x83, 0x87, 0x8F, 0x91];
const DISCONNECT_V5: &[u8] = &[
    0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x87, 0x89, 0x8B, 0x8D, 0x8E, 0x8F, 0x90, 0x93, 0x94, 0x95, 0x96,
    0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0, 0xA1, 0xA2,
];
const AUTH_V5: &[u8] = &[0x00, 0x18, 0x19];

/// True when `code` is a reason code `packet` may carry in `version`. In v3 only CONNACK and SUBACK
/// carry codes; every other packet's implicit code is 0.
pub fn is_allowed_reason_code(packet: PacketType, version: ProtocolVersion, code: u8) -> bool {
    let v5 = version.is_v5();
    let allowed: &[u8] = match packet {
        PacketType::Connack if v5 => CONNACK_V5,
        PacketType::Connack => CONNACK_V3,
        PacketType::Suback if v5 => SUBACK_V5,
        PacketType::Suback => SUBACK_V3,
        _ if !v5 => &[0x00],
        PacketType::Puback | PacketType::Pubrec => PUBACK_PUBREC,
        PacketType::Pubrel | PacketType::Pubcomp => PUBREL_PUBCOMP,
        PacketType::Unsuback => UNSUBACK_V5,
        PacketType::Disconnect => DISCONNECT_V5,
        PacketType::Auth => AUTH_V5,
        _ => &[0x00],
    };
    allowed.contains(&code)
}
