//! Owns the 12-byte `Subscription` record stored in trie nodes and the v5 SUBSCRIBE options byte.
//! Plain `Copy` data: created on the subscribe path, read by matchers on any thread.

/// One subscription as stored in the trie (12 bytes: session 4, id 4, worker 2, options 1, pad 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subscription {
    pub session: u32,
    pub worker: u16,
    pub options: SubOptions,
    /// Subscription Identifier [MQTT-3.8.2.1.2]; 0 = none.
    pub subscription_id: u32,
}

/// The v5 SUBSCRIBE options byte [MQTT-3.8.3.1]: bits 0-1 maximum QoS, bit 2 No Local, bit 3 Retain
/// As Published, bits 4-5 Retain Handling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SubOptions(pub u8);

impl SubOptions {
    pub fn new(qos: u8, no_local: bool, retain_as_published: bool, retain_handling: u8) -> Self {
        SubOptions(
            (qos & 0b11) | ((no_local as u8) << 2) | ((retain_as_published as u8) << 3) | ((retain_handling & 0b11) << 4),
        )
    }
    #[inline]
    pub fn qos(self) -> u8 {
        self.0 & 0b11
    }
    #[inline]
    pub fn no_local(self) -> bool {
        self.0 & 0b100 != 0
    }
    #[inline]
    pub fn retain_as_published(self) -> bool {
        self.0 & 0b1000 != 0
    }
    #[inline]
    pub fn retain_handling(self) -> u8 {
        (self.0 >> 4) & 0b11
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_bits() {
        assert_eq!(std::mem::size_of::<Subscription>(), 12);
        let o = SubOptions::new(2, true, false, 1);
        assert_eq!(o.0, 0b01_0110);
        assert_eq!((o.qos(), o.no_local(), o.retain_as_published(), o.retain_handling()), (2, true, false, 1));
        let o = SubOptions::new(1, false, true, 2);
        assert_eq!((o.qos(), o.no_local(), o.retain_as_published(), o.retain_handling()), (1, false, true, 2));
    }
}
