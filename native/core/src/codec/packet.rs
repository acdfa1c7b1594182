//! Owned MQTT packet model: protocol versions, packet types, properties and one struct per packet.

/// MQTT protocol level as carried in CONNECT.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtocolVersion {
    /// MQTT 3.1, protocol name "MQIsdp".
    V31 = 3,
    /// MQTT 3.1.1, protocol name "MQTT".
    V311 = 4,
    /// MQTT 5.0, protocol name "MQTT".
    V5 = 5,
}

impl ProtocolVersion {
    /// Maps a CONNECT protocol level byte to a version.
    pub fn from_level(level: u8) -> Option<Self> {
        match level {
            3 => Some(Self::V31),
            4 => Some(Self::V311),
            5 => Some(Self::V5),
            _ => None,
        }
    }

    /// The protocol level byte.
    pub fn level(self) -> u8 {
        self as u8
    }

    /// The protocol name CONNECT carries for this version.
    pub fn protocol_name(self) -> &'static str {
        match self {
            Self::V31 => "MQIsdp",
            Self::V311 | Self::V5 => "MQTT",
        }
    }

    /// True for MQTT 5.0, the only version with properties and reason codes everywhere.
    #[inline]
    pub fn is_v5(self) -> bool {
        matches!(self, Self::V5)
    }
}

/// MQTT control packet type (high nibble of the first fixed header byte).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketType {
    Connect = 1,
    Connack = 2,
    Publish = 3,
    Puback = 4,
    Pubrec = 5,
    Pubrel = 6,
    Pubcomp = 7,
    Subscribe = 8,
    Suback = 9,
    Unsubscribe = 10,
    Unsuback = 11,
    Pingreq = 12,
    Pingresp = 13,
    Disconnect = 14,
    Auth = 15,
}

impl PacketType {
    /// The packet type of a first fixed header byte; None for the reserved type 0.
    pub fn from_header(header: u8) -> Option<Self> {
        Some(match header >> 4 {
            1 => Self::Connect,
            2 => Self::Connack,
            3 => Self::Publish,
            4 => Self::Puback,
            5 => Self::Pubrec,
            6 => Self::Pubrel,
            7 => Self::Pubcomp,
            8 => Self::Subscribe,
            9 => Self::Suback,
            10 => Self::Unsubscribe,
            11 => Self::Unsuback,
            12 => Self::Pingreq,
            13 => Self::Pingresp,
            14 => Self::Disconnect,
            15 => Self::Auth,
            _ => return None,
        })
    }

    /// The fixed header flags every packet type but PUBLISH must carry [MQTT-2.1.3-1].
    pub fn required_flags(self) -> u8 {
        match self {
            Self::Pubrel | Self::Subscribe | Self::Unsubscribe => 0b0010,
            _ => 0,
        }
    }
}

/// MQTT 5 properties, one field per property. Absent properties are `None`; the two properties that
/// may repeat (Subscription Identifier, User Property) are vectors, empty when absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties {
    pub payload_format_indicator: Option<u8>,
    pub message_expiry_interval: Option<u32>,
    pub content_type: Option<String>,
    pub response_topic: Option<String>,
    pub correlation_data: Option<Vec<u8>>,
    pub subscription_identifiers: Vec<u32>,
    pub session_expiry_interval: Option<u32>,
    pub assigned_client_identifier: Option<String>,
    pub server_keep_alive: Option<u16>,
    pub authentication_method: Option<String>,
    pub authentication_data: Option<Vec<u8>>,
    pub request_problem_information: Option<u8>,
    pub will_delay_interval: Option<u32>,
    pub request_response_information: Option<u8>,
    pub response_information: Option<String>,
    pub server_reference: Option<String>,
    pub reason_string: Option<String>,
    pub receive_maximum: Option<u16>,
    pub topic_alias_maximum: Option<u16>,
    pub topic_alias: Option<u16>,
    pub maximum_qos: Option<u8>,
    pub retain_available: Option<u8>,
    pub user_properties: Vec<(String, String)>,
    pub maximum_packet_size: Option<u32>,
    pub wildcard_subscription_available: Option<u8>,
    pub subscription_identifiers_available: Option<u8>,
    pub shared_subscription_available: Option<u8>,
}

impl Properties {
    /// True when no property is set.
    pub fn is_empty(&self) -> bool {
        *self == Properties::default()
    }
}

/// The will message of a CONNECT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Will {
    pub topic: String,
    pub payload: Vec<u8>,
    pub qos: u8,
    pub retain: bool,
    /// Will properties (v5 only).
    pub properties: Properties,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connect {
    /// Detected from the protocol name and level when decoding; chosen by the caller when encoding.
    pub version: ProtocolVersion,
    /// Clean Start (v5) / Clean Session (v3).
    pub clean_start: bool,
    pub keep_alive: u16,
    pub client_id: String,
    pub will: Option<Will>,
    pub username: Option<String>,
    pub password: Option<Vec<u8>>,
    pub properties: Properties,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connack {
    pub session_present: bool,
    /// v5 reason code, or the v3 return code (0..=5).
    pub reason_code: u8,
    pub properties: Properties,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publish {
    pub dup: bool,
    pub qos: u8,
    pub retain: bool,
    /// Empty only in v5 with a topic alias.
    pub topic: String,
    /// 0 for QoS 0.
    pub packet_id: u16,
    pub payload: Vec<u8>,
    pub properties: Properties,
}

/// PUBACK, PUBREC, PUBREL and PUBCOMP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack {
    pub packet_id: u16,
    /// Always 0 in v3.
    pub reason_code: u8,
    pub properties: Properties,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub filter: String,
    pub qos: u8,
    /// v5 only.
    pub no_local: bool,
    /// v5 only.
    pub retain_as_published: bool,
    /// v5 only: 0 send retained, 1 only for new subscriptions, 2 never.
    pub retain_handling: u8,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscribe {
    pub packet_id: u16,
    pub subscriptions: Vec<Subscription>,
    pub properties: Properties,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suback {
    pub packet_id: u16,
    pub reason_codes: Vec<u8>,
    pub properties: Properties,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsubscribe {
    pub packet_id: u16,
    pub filters: Vec<String>,
    pub properties: Properties,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsuback {
    pub packet_id: u16,
    /// v5 only; empty in v3 (not on the wire).
    pub reason_codes: Vec<u8>,
    pub properties: Properties,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disconnect {
    /// Always 0 in v3.
    pub reason_code: u8,
    pub properties: Properties,
}

/// v5 only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    pub reason_code: u8,
    pub properties: Properties,
}

/// Any MQTT control packet. Variants are unboxed on purpose: owned packets are built once per
/// control message (PUBLISH goes through `PublishView`), and plain variants keep matching simple.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet {
    Connect(Connect),
    Connack(Connack),
    Publish(Publish),
    Puback(Ack),
    Pubrec(Ack),
    Pubrel(Ack),
    Pubcomp(Ack),
    Subscribe(Subscribe),
    Suback(Suback),
    Unsubscribe(Unsubscribe),
    Unsuback(Unsuback),
    Pingreq,
    Pingresp,
    Disconnect(Disconnect),
    Auth(Auth),
}

impl Packet {
    pub fn packet_type(&self) -> PacketType {
        match self {
            Packet::Connect(_) => PacketType::Connect,
            Packet::Connack(_) => PacketType::Connack,
            Packet::Publish(_) => PacketType::Publish,
            Packet::Puback(_) => PacketType::Puback,
            Packet::Pubrec(_) => PacketType::Pubrec,
            Packet::Pubrel(_) => PacketType::Pubrel,
            Packet::Pubcomp(_) => PacketType::Pubcomp,
            Packet::Subscribe(_) => PacketType::Subscribe,
            Packet::Suback(_) => PacketType::Suback,
            Packet::Unsubscribe(_) => PacketType::Unsubscribe,
            Packet::Unsuback(_) => PacketType::Unsuback,
            Packet::Pingreq => PacketType::Pingreq,
            Packet::Pingresp => PacketType::Pingresp,
            Packet::Disconnect(_) => PacketType::Disconnect,
            Packet::Auth(_) => PacketType::Auth,
        }
    }
}
