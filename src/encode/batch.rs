//! Assembling one runtime batch from several client polls, within `batch_size` messages and
//! (softly) `max_batch_bytes` payload bytes.

use iggy_connector_sdk::ProducedMessage;

/// The messages of the batch being assembled.
#[derive(Debug)]
pub struct Batch {
    messages: Vec<ProducedMessage>,
    bytes: usize,
    max_messages: usize,
    max_bytes: usize,
}

impl Batch {
    /// An empty batch with the given limits.
    pub fn new(max_messages: usize, max_bytes: usize) -> Self {
        Self {
            messages: Vec::with_capacity(max_messages.min(16_384)),
            bytes: 0,
            max_messages,
            max_bytes,
        }
    }

    /// Whether no more messages should be added. The byte cap is soft: the message that
    /// crosses it is kept, so a batch always makes progress even with one huge row.
    pub fn is_full(&self) -> bool {
        self.messages.len() >= self.max_messages || self.bytes >= self.max_bytes
    }

    /// Adds a message.
    pub fn push(&mut self, message: ProducedMessage) {
        self.bytes += message.payload.len();
        self.messages.push(message);
    }

    /// Payload bytes so far.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Messages so far.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether the batch has no messages.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The messages, for handing over.
    pub fn into_messages(self) -> Vec<ProducedMessage> {
        self.messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(bytes: usize) -> ProducedMessage {
        ProducedMessage {
            id: None,
            checksum: None,
            timestamp: None,
            origin_timestamp: None,
            headers: None,
            payload: vec![b'x'; bytes],
        }
    }

    #[test]
    fn full_by_count() {
        let mut b = Batch::new(2, 1000);
        b.push(message(1));
        assert!(!b.is_full());
        b.push(message(1));
        assert!(b.is_full());
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn full_by_bytes_keeps_the_crossing_message() {
        let mut b = Batch::new(100, 10);
        b.push(message(6));
        assert!(!b.is_full());
        b.push(message(6));
        assert!(b.is_full());
        assert_eq!(b.bytes(), 12);
        assert_eq!(b.into_messages().len(), 2);
    }
}
