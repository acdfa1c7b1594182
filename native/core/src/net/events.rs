//! The batch a driver turn produces: fixed-size event records in a caller-supplied u32 table, and
//! the bytes read, back to back, in one buffer. The worker thread gets both at once, so one turn
//! of the event loop costs one crossing into JavaScript, whatever the number of connections.

/// u32 words per event record: kind, connection id, then two words whose meaning depends on the kind.
pub const EVENT_WORDS: usize = 4;

/// A connection was accepted: `[EV_OPEN, id, listener | peer port << 16, peer IPv4 address]`
/// (the address word is 0 for an IPv6 peer).
pub const EV_OPEN: u32 = 1;
/// Bytes arrived: `[EV_DATA, id, offset, length]` into the batch's data.
pub const EV_DATA: u32 = 2;
/// Everything queued for the connection has gone to the kernel: `[EV_DRAIN, id, 0, 0]`.
pub const EV_DRAIN: u32 = 3;
/// The connection is gone (peer closed, error, or a close the worker asked for has finished):
/// `[EV_CLOSE, id, errno, 0]`, errno 0 for an orderly close. The id is invalid afterwards.
pub const EV_CLOSE: u32 = 4;
/// accept() failed on a listener for a reason other than "no more": `[EV_ACCEPT_ERROR, listener, errno, 0]`.
/// The listener is tried again on a later turn.
pub const EV_ACCEPT_ERROR: u32 = 5;
/// A connection of a PROXY protocol listener was refused before it was opened (no EV_OPEN came
/// for it): `[EV_PROXY_ERROR, listener, reason (proxy::ProxyError), 0]`.
pub const EV_PROXY_ERROR: u32 = 7;

/// Where one turn writes its events and data.
pub struct EventSink<'a> {
    table: &'a mut [u32],
    count: usize,
    /// Bytes read this turn; `data.len()` is the next free offset.
    pub data: Vec<u8>,
    data_limit: usize,
}

impl<'a> EventSink<'a> {
    /// `table` holds `table.len() / EVENT_WORDS` records; `data` is reused across turns (cleared here)
    /// and grows up to `data_limit` bytes.
    pub fn new(table: &'a mut [u32], mut data: Vec<u8>, data_limit: usize) -> Self {
        data.clear();
        EventSink { table, count: 0, data, data_limit }
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// Room for another record.
    pub fn has_room(&self) -> bool {
        (self.count + 1) * EVENT_WORDS <= self.table.len()
    }

    /// Room for `n` more records.
    pub fn has_room_for(&self, n: usize) -> bool {
        (self.count + n) * EVENT_WORDS <= self.table.len()
    }

    /// Room for at least two records (data and the close that may follow it).
    pub fn has_room_for_read(&self) -> bool {
        (self.count + 2) * EVENT_WORDS <= self.table.len() && self.data.len() < self.data_limit
    }

    /// Bytes that may still be read this turn.
    pub fn data_room(&self) -> usize {
        self.data_limit.saturating_sub(self.data.len())
    }

    pub fn push(&mut self, kind: u32, id: u32, a: u32, b: u32) {
        let at = self.count * EVENT_WORDS;
        self.table[at..at + EVENT_WORDS].copy_from_slice(&[kind, id, a, b]);
        self.count += 1;
    }

    pub fn into_data(self) -> Vec<u8> {
        self.data
    }
}
