//! Whole-packet decode and encode for the rare packets (CONNECT, SUBSCRIBE, acks...), as plain
//! JS objects shaped like mqtt-packet's (cmd, messageId, properties in camelCase), and the hot
//! PUBLISH encoder that writes into a caller-supplied buffer.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use spindle_core::codec::{self, Packet, ProtocolVersion};

use crate::errors::{codec_error, invalid_arg, ErrorInfo};

#[napi(object)]
#[derive(Default)]
pub struct JsProperties {
    pub payload_format_indicator: Option<bool>,
    pub message_expiry_interval: Option<u32>,
    pub content_type: Option<String>,
    pub response_topic: Option<String>,
    pub correlation_data: Option<Buffer>,
    /// Repeats in PUBLISH (server to client); one value elsewhere.
    pub subscription_identifier: Option<Vec<u32>>,
    pub session_expiry_interval: Option<u32>,
    pub assigned_client_identifier: Option<String>,
    pub server_keep_alive: Option<u32>,
    pub authentication_method: Option<String>,
    pub authentication_data: Option<Buffer>,
    pub request_problem_information: Option<bool>,
    pub will_delay_interval: Option<u32>,
    pub request_response_information: Option<bool>,
    pub response_information: Option<String>,
    pub server_reference: Option<String>,
    pub reason_string: Option<String>,
    pub receive_maximum: Option<u32>,
    pub topic_alias_maximum: Option<u32>,
    pub topic_alias: Option<u32>,
    #[napi(js_name = "maximumQoS")]
    pub maximum_qos: Option<u32>,
    pub retain_available: Option<bool>,
    /// In wire order; a key may repeat.
    pub user_properties: Option<Vec<Vec<String>>>,
    pub maximum_packet_size: Option<u32>,
    pub wildcard_subscription_available: Option<bool>,
    pub subscription_identifiers_available: Option<bool>,
    pub shared_subscription_available: Option<bool>,
}

#[napi(object)]
pub struct JsWill {
    pub topic: String,
    pub payload: Buffer,
    pub qos: u32,
    pub retain: bool,
    pub properties: Option<JsProperties>,
}

#[napi(object)]
pub struct JsSubscription {
    pub topic: String,
    pub qos: u32,
    /// No Local (v5).
    pub nl: Option<bool>,
    /// Retain As Published (v5).
    pub rap: Option<bool>,
    /// Retain Handling 0..2 (v5).
    pub rh: Option<u32>,
}

/// Any MQTT packet, mqtt-packet style: `cmd` names the type and selects the fields that apply.
#[napi(object)]
#[derive(Default)]
pub struct JsPacket {
    pub cmd: String,
    // CONNECT
    pub protocol_version: Option<u32>,
    pub clean: Option<bool>,
    pub keepalive: Option<u32>,
    pub client_id: Option<String>,
    pub will: Option<JsWill>,
    pub username: Option<String>,
    pub password: Option<Buffer>,
    // CONNACK
    pub session_present: Option<bool>,
    /// CONNACK return code (v3) / reason code (v5), and the reason code of acks, DISCONNECT, AUTH.
    pub reason_code: Option<u32>,
    // PUBLISH
    pub topic: Option<String>,
    pub payload: Option<Buffer>,
    pub qos: Option<u32>,
    pub dup: Option<bool>,
    pub retain: Option<bool>,
    pub message_id: Option<u32>,
    // SUBSCRIBE / UNSUBSCRIBE and their acks
    pub subscriptions: Option<Vec<JsSubscription>>,
    pub unsubscriptions: Option<Vec<String>>,
    pub granted: Option<Vec<u32>>,
    pub properties: Option<JsProperties>,
}

fn version_of(level: u32) -> Result<ProtocolVersion, String> {
    u8::try_from(level)
        .ok()
        .and_then(ProtocolVersion::from_level)
        .ok_or_else(|| invalid_arg("UNSUPPORTED_PROTOCOL_VERSION", format!("protocol level {level}")))
}

fn props_to_js(p: codec::Properties) -> Option<JsProperties> {
    if p == codec::Properties::default() {
        return None;
    }
    let flag = |v: Option<u8>| v.map(|b| b != 0);
    Some(JsProperties {
        payload_format_indicator: flag(p.payload_format_indicator),
        message_expiry_interval: p.message_expiry_interval,
        content_type: p.content_type,
        response_topic: p.response_topic,
        correlation_data: p.correlation_data.map(Buffer::from),
        subscription_identifier: if p.subscription_identifiers.is_empty() { None } else { Some(p.subscription_identifiers) },
        session_expiry_interval: p.session_expiry_interval,
        assigned_client_identifier: p.assigned_client_identifier,
        server_keep_alive: p.server_keep_alive.map(u32::from),
        authentication_method: p.authentication_method,
        authentication_data: p.authentication_data.map(Buffer::from),
        request_problem_information: flag(p.request_problem_information),
        will_delay_interval: p.will_delay_interval,
        request_response_information: flag(p.request_response_information),
        response_information: p.response_information,
        server_reference: p.server_reference,
        reason_string: p.reason_string,
        receive_maximum: p.receive_maximum.map(u32::from),
        topic_alias_maximum: p.topic_alias_maximum.map(u32::from),
        topic_alias: p.topic_alias.map(u32::from),
        maximum_qos: p.maximum_qos.map(u32::from),
        retain_available: flag(p.retain_available),
        user_properties: if p.user_properties.is_empty() {
            None
        } else {
            Some(p.user_properties.into_iter().map(|(k, v)| vec![k, v]).collect())
        },
        maximum_packet_size: p.maximum_packet_size,
        wildcard_subscription_available: flag(p.wildcard_subscription_available),
        subscription_identifiers_available: flag(p.subscription_identifiers_available),
        shared_subscription_available: flag(p.shared_subscription_available),
    })
}

fn narrow<T: TryFrom<u32>>(v: Option<u32>, field: &str) -> Result<Option<T>, String> {
    v.map(|x| T::try_from(x).map_err(|_| invalid_arg("INVALID_ARGUMENT", format!("{field} out of range: {x}"))))
        .transpose()
}

fn props_from_js(p: Option<JsProperties>) -> Result<codec::Properties, String> {
    let Some(p) = p else { return Ok(codec::Properties::default()) };
    let flag = |v: Option<bool>| v.map(u8::from);
    let mut user = Vec::new();
    for pair in p.user_properties.unwrap_or_default() {
        let [k, v]: [String; 2] = pair
            .try_into()
            .map_err(|_| invalid_arg("INVALID_ARGUMENT", "userProperties entries are [key, value] pairs".into()))?;
        user.push((k, v));
    }
    Ok(codec::Properties {
        payload_format_indicator: flag(p.payload_format_indicator),
        message_expiry_interval: p.message_expiry_interval,
        content_type: p.content_type,
        response_topic: p.response_topic,
        correlation_data: p.correlation_data.map(|b| b.to_vec()),
        subscription_identifiers: p.subscription_identifier.unwrap_or_default(),
        session_expiry_interval: p.session_expiry_interval,
        assigned_client_identifier: p.assigned_client_identifier,
        server_keep_alive: narrow(p.server_keep_alive, "serverKeepAlive")?,
        authentication_method: p.authentication_method,
        authentication_data: p.authentication_data.map(|b| b.to_vec()),
        request_problem_information: flag(p.request_problem_information),
        will_delay_interval: p.will_delay_interval,
        request_response_information: flag(p.request_response_information),
        response_information: p.response_information,
        server_reference: p.server_reference,
        reason_string: p.reason_string,
        receive_maximum: narrow(p.receive_maximum, "receiveMaximum")?,
        topic_alias_maximum: narrow(p.topic_alias_maximum, "topicAliasMaximum")?,
        topic_alias: narrow(p.topic_alias, "topicAlias")?,
        maximum_qos: narrow(p.maximum_qos, "maximumQoS")?,
        retain_available: flag(p.retain_available),
        user_properties: user,
        maximum_packet_size: p.maximum_packet_size,
        wildcard_subscription_available: flag(p.wildcard_subscription_available),
        subscription_identifiers_available: flag(p.subscription_identifiers_available),
        shared_subscription_available: flag(p.shared_subscription_available),
    })
}

fn ack_to_js(cmd: &str, a: codec::Ack) -> JsPacket {
    JsPacket {
        cmd: cmd.into(),
        message_id: Some(a.packet_id as u32),
        reason_code: Some(a.reason_code as u32),
        properties: props_to_js(a.properties),
        ..Default::default()
    }
}

fn packet_to_js(packet: Packet) -> JsPacket {
    match packet {
        Packet::Connect(c) => JsPacket {
            cmd: "connect".into(),
            protocol_version: Some(c.version as u32),
            clean: Some(c.clean_start),
            keepalive: Some(c.keep_alive as u32),
            client_id: Some(c.client_id),
            will: c.will.map(|w| JsWill {
                topic: w.topic,
                payload: w.payload.into(),
                qos: w.qos as u32,
                retain: w.retain,
                properties: props_to_js(w.properties),
            }),
            username: c.username,
            password: c.password.map(Buffer::from),
            properties: props_to_js(c.properties),
            ..Default::default()
        },
        Packet::Connack(c) => JsPacket {
            cmd: "connack".into(),
            session_present: Some(c.session_present),
            reason_code: Some(c.reason_code as u32),
            properties: props_to_js(c.properties),
            ..Default::default()
        },
        Packet::Publish(p) => JsPacket {
            cmd: "publish".into(),
            topic: Some(p.topic),
            payload: Some(p.payload.into()),
            qos: Some(p.qos as u32),
            dup: Some(p.dup),
            retain: Some(p.retain),
            message_id: if p.qos > 0 { Some(p.packet_id as u32) } else { None },
            properties: props_to_js(p.properties),
            ..Default::default()
        },
        Packet::Puback(a) => ack_to_js("puback", a),
        Packet::Pubrec(a) => ack_to_js("pubrec", a),
        Packet::Pubrel(a) => ack_to_js("pubrel", a),
        Packet::Pubcomp(a) => ack_to_js("pubcomp", a),
        Packet::Subscribe(s) => JsPacket {
            cmd: "subscribe".into(),
            message_id: Some(s.packet_id as u32),
            subscriptions: Some(
                s.subscriptions
                    .into_iter()
                    .map(|s| JsSubscription {
                        topic: s.filter,
                        qos: s.qos as u32,
                        nl: Some(s.no_local),
                        rap: Some(s.retain_as_published),
                        rh: Some(s.retain_handling as u32),
                    })
                    .collect(),
            ),
            properties: props_to_js(s.properties),
            ..Default::default()
        },
        Packet::Suback(s) => JsPacket {
            cmd: "suback".into(),
            message_id: Some(s.packet_id as u32),
            granted: Some(s.reason_codes.into_iter().map(u32::from).collect()),
            properties: props_to_js(s.properties),
            ..Default::default()
        },
        Packet::Unsubscribe(u) => JsPacket {
            cmd: "unsubscribe".into(),
            message_id: Some(u.packet_id as u32),
            unsubscriptions: Some(u.filters),
            properties: props_to_js(u.properties),
            ..Default::default()
        },
        Packet::Unsuback(u) => JsPacket {
            cmd: "unsuback".into(),
            message_id: Some(u.packet_id as u32),
            granted: Some(u.reason_codes.into_iter().map(u32::from).collect()),
            properties: props_to_js(u.properties),
            ..Default::default()
        },
        Packet::Pingreq => JsPacket { cmd: "pingreq".into(), ..Default::default() },
        Packet::Pingresp => JsPacket { cmd: "pingresp".into(), ..Default::default() },
        Packet::Disconnect(d) => JsPacket {
            cmd: "disconnect".into(),
            reason_code: Some(d.reason_code as u32),
            properties: props_to_js(d.properties),
            ..Default::default()
        },
        Packet::Auth(a) => JsPacket {
            cmd: "auth".into(),
            reason_code: Some(a.reason_code as u32),
            properties: props_to_js(a.properties),
            ..Default::default()
        },
    }
}

fn u8_field(v: Option<u32>, field: &str, default: u8) -> Result<u8, String> {
    Ok(narrow::<u8>(v, field)?.unwrap_or(default))
}

fn u16_field(v: Option<u32>, field: &str) -> Result<u16, String> {
    Ok(narrow::<u16>(v, field)?.unwrap_or(0))
}

fn required<T>(v: Option<T>, field: &str) -> Result<T, String> {
    v.ok_or_else(|| invalid_arg("MISSING_FIELD", format!("{field} is required")))
}

fn ack_from_js(p: JsPacket) -> Result<codec::Ack, String> {
    Ok(codec::Ack {
        packet_id: u16_field(p.message_id, "messageId")?,
        reason_code: u8_field(p.reason_code, "reasonCode", 0)?,
        properties: props_from_js(p.properties)?,
    })
}

fn packet_from_js(p: JsPacket, version: ProtocolVersion) -> Result<Packet, String> {
    Ok(match p.cmd.as_str() {
        "connect" => {
            let level = u8_field(p.protocol_version, "protocolVersion", version as u8)?;
            Packet::Connect(codec::Connect {
                version: ProtocolVersion::from_level(level)
                    .ok_or_else(|| invalid_arg("UNSUPPORTED_PROTOCOL_VERSION", format!("protocol level {level}")))?,
                clean_start: p.clean.unwrap_or(true),
                keep_alive: u16_field(p.keepalive, "keepalive")?,
                client_id: p.client_id.unwrap_or_default(),
                will: p
                    .will
                    .map(|w| -> Result<codec::Will, String> {
                        Ok(codec::Will {
                            topic: w.topic,
                            payload: w.payload.to_vec(),
                            qos: u8_field(Some(w.qos), "will.qos", 0)?,
                            retain: w.retain,
                            properties: props_from_js(w.properties)?,
                        })
                    })
                    .transpose()?,
                username: p.username,
                password: p.password.map(|b| b.to_vec()),
                properties: props_from_js(p.properties)?,
            })
        }
        "connack" => Packet::Connack(codec::Connack {
            session_present: p.session_present.unwrap_or(false),
            reason_code: u8_field(p.reason_code, "reasonCode", 0)?,
            properties: props_from_js(p.properties)?,
        }),
        "publish" => Packet::Publish(codec::Publish {
            dup: p.dup.unwrap_or(false),
            qos: u8_field(p.qos, "qos", 0)?,
            retain: p.retain.unwrap_or(false),
            topic: required(p.topic, "topic")?,
            packet_id: u16_field(p.message_id, "messageId")?,
            payload: p.payload.map(|b| b.to_vec()).unwrap_or_default(),
            properties: props_from_js(p.properties)?,
        }),
        "puback" => Packet::Puback(ack_from_js(p)?),
        "pubrec" => Packet::Pubrec(ack_from_js(p)?),
        "pubrel" => Packet::Pubrel(ack_from_js(p)?),
        "pubcomp" => Packet::Pubcomp(ack_from_js(p)?),
        "subscribe" => Packet::Subscribe(codec::Subscribe {
            packet_id: u16_field(p.message_id, "messageId")?,
            subscriptions: required(p.subscriptions, "subscriptions")?
                .into_iter()
                .map(|s| -> Result<codec::Subscription, String> {
                    Ok(codec::Subscription {
                        filter: s.topic,
                        qos: u8_field(Some(s.qos), "subscriptions.qos", 0)?,
                        no_local: s.nl.unwrap_or(false),
                        retain_as_published: s.rap.unwrap_or(false),
                        retain_handling: u8_field(s.rh, "subscriptions.rh", 0)?,
                    })
                })
                .collect::<Result<_, _>>()?,
            properties: props_from_js(p.properties)?,
        }),
        "suback" => Packet::Suback(codec::Suback {
            packet_id: u16_field(p.message_id, "messageId")?,
            reason_codes: codes(p.granted, "granted")?,
            properties: props_from_js(p.properties)?,
        }),
        "unsubscribe" => Packet::Unsubscribe(codec::Unsubscribe {
            packet_id: u16_field(p.message_id, "messageId")?,
            filters: required(p.unsubscriptions, "unsubscriptions")?,
            properties: props_from_js(p.properties)?,
        }),
        "unsuback" => Packet::Unsuback(codec::Unsuback {
            packet_id: u16_field(p.message_id, "messageId")?,
            reason_codes: codes(p.granted, "granted")?,
            properties: props_from_js(p.properties)?,
        }),
        "pingreq" => Packet::Pingreq,
        "pingresp" => Packet::Pingresp,
        "disconnect" => Packet::Disconnect(codec::Disconnect {
            reason_code: u8_field(p.reason_code, "reasonCode", 0)?,
            properties: props_from_js(p.properties)?,
        }),
        "auth" => Packet::Auth(codec::Auth {
            reason_code: u8_field(p.reason_code, "reasonCode", 0)?,
            properties: props_from_js(p.properties)?,
        }),
        other => return Err(invalid_arg("INVALID_ARGUMENT", format!("unknown cmd: {other}"))),
    })
}

fn codes(v: Option<Vec<u32>>, field: &str) -> Result<Vec<u8>, String> {
    v.unwrap_or_default()
        .into_iter()
        .map(|c| u8::try_from(c).map_err(|_| invalid_arg("INVALID_ARGUMENT", format!("{field} out of range: {c}"))))
        .collect()
}

/// Decodes one whole packet (fixed header included) at `buf[start..start+len]` into an object.
/// Validates everything; throws a JS error with the core's `code` on bad input.
#[napi(catch_unwind)]
pub fn decode_packet(level: u32, buf: &[u8], start: Option<u32>, len: Option<u32>) -> Result<JsPacket, String> {
    let version = version_of(level)?;
    let start = start.unwrap_or(0) as usize;
    let end = len.map(|l| start + l as usize).unwrap_or(buf.len());
    let frame = buf
        .get(start..end)
        .ok_or_else(|| invalid_arg("OUT_OF_RANGE", format!("{start}..{end} is outside a buffer of {}", buf.len())))?;
    codec::decode(version, frame).map(packet_to_js).map_err(codec_error)
}

/// Encodes any packet object into a new Buffer (for the rare packets; PUBLISH has encodePublish).
#[napi(catch_unwind)]
pub fn encode_packet(level: u32, packet: JsPacket) -> Result<Buffer, String> {
    let version = version_of(level)?;
    let packet = packet_from_js(packet, version)?;
    let mut out = Vec::with_capacity(codec::encoded_len(version, &packet));
    codec::encode(version, &packet, &mut out).map_err(codec_error)?;
    Ok(out.into())
}

/// Validates a whole packet without building an object (cheap check, e.g. for fuzzing from JS).
#[napi(catch_unwind)]
pub fn check_packet(level: u32, buf: &[u8]) -> Result<Option<ErrorInfo>, String> {
    let version = version_of(level)?;
    Ok(codec::decode(version, buf).err().map(ErrorInfo::from))
}

/// The hot PUBLISH encoder: writes one PUBLISH into `out` at `offset` and returns the number of
/// bytes written, or -1 when `out` is too small (nothing written). `flags`: bits 0-1 QoS, bit 2 DUP,
/// bit 3 RETAIN. `props` is a v5 property block without its length prefix (ignored for v3).
/// For QoS > 0 the packet identifier sits at `offset + publishPacketIdOffset(...)` and may be
/// patched in place for each subscriber.
#[allow(clippy::too_many_arguments)]
#[napi(catch_unwind)]
pub fn encode_publish(
    level: u32,
    mut out: BufferSlice,
    offset: u32,
    flags: u32,
    packet_id: u32,
    topic: &[u8],
    payload: &[u8],
    props: Option<&[u8]>,
) -> Result<i32, String> {
    let version = version_of(level)?;
    let target = (*out)
        .get_mut(offset as usize..)
        .ok_or_else(|| invalid_arg("OUT_OF_RANGE", format!("offset {offset} is past the buffer")))?;
    let props = if version == ProtocolVersion::V5 { props.unwrap_or(&[]) } else { &[] };
    match codec::write_publish(
        version,
        target,
        (flags & 3) as u8,
        flags & 4 != 0,
        flags & 8 != 0,
        topic,
        packet_id as u16,
        props,
        payload,
    ) {
        Ok(written) => Ok(written.len as i32),
        Err(e) if e.code == "BUFFER_TOO_SMALL" => Ok(-1),
        Err(e) => Err(codec_error(e)),
    }
}

/// Total bytes of a PUBLISH with these parts (for sizing buffers before encodePublish).
#[napi(catch_unwind)]
pub fn publish_frame_len(level: u32, qos: u32, topic_len: u32, payload_len: u32, props_len: u32) -> Result<u32, String> {
    let version = version_of(level)?;
    Ok(codec::publish_frame_len(version, topic_len as usize, props_len as usize, payload_len as usize, qos as u8) as u32)
}

/// The property block of a forwarded PUBLISH: the inbound block (`props`, without its length
/// prefix) minus Topic Alias, Message Expiry Interval and Subscription Identifiers, which are the
/// broker's to set per subscriber [MQTT-3.3.2-7][MQTT-3.3.4-3]; then the given ones appended.
#[napi(catch_unwind)]
pub fn rewrite_publish_properties(props: &[u8], message_expiry: Option<u32>, topic_alias: Option<u32>, subscription_ids: Option<Vec<u32>>) -> Result<Buffer, String> {
    let alias = narrow::<u16>(topic_alias, "topicAlias")?;
    let mut out = Vec::with_capacity(props.len() + 16);
    codec::rewrite_publish_properties(props, message_expiry, alias, subscription_ids.as_deref().unwrap_or(&[]), &mut out).map_err(codec_error)?;
    Ok(out.into())
}
