//! MQTT codec. (being written)
