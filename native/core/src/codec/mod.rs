//! MQTT codec for 3.1, 3.1.1 and 5.0: framing, decoding, encoding and validation. Never touches
//! I/O: callers hand it bytes and get packets, frame offsets or bytes back.

mod ack;
mod connect;
pub mod decode;
pub mod encode;
pub mod error;
pub mod framer;
pub mod header;
pub mod packet;
pub mod properties;
pub mod publish;
mod reader;
pub mod reason_codes;
mod subscribe;
pub mod utf8;
pub mod varint;
mod writer;

pub use decode::{checked_packet_type, decode, decode_from_client};
pub use encode::{encode, encoded_len};
pub use error::{reason, CodecError};
pub use framer::{FrameRef, FrameSource, Framer};
pub use header::{parse_fixed_header, FixedHeader};
pub use packet::{
    Ack, Auth, Connack, Connect, Disconnect, Packet, PacketType, Properties, ProtocolVersion, Suback, Subscribe,
    Subscription, Unsuback, Unsubscribe, Will, Publish,
};
pub use properties::{
    decode_properties, encode_properties, properties_len, properties_wire_len, property_spec, write_properties_block,
    PropertyContext, PropertyKind, PropertyReader, PropertySpec, PropertyValue, RawProperty, PROPERTY_TABLE,
};
pub use publish::{
    decode_publish_view, decode_publish_view_from_server, patch_packet_id, publish_frame_len,
    rewrite_publish_properties, set_dup, write_publish, PublishView, PublishWritten,
};
pub use reason_codes::is_allowed_reason_code;
pub use utf8::{check_topic_filter, check_topic_name, check_utf8, check_utf8_payload, split_shared};
pub use varint::{read_varint, varint_len, write_varint, VARINT_MAX};
