//! The impure services the pure engine is handed: the wall clock and secure entropy.

use juegoland_sdk::EntropySource;

/// Milliseconds since the Unix epoch: the instant captured for one operation.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or_default()
}

/// Secure entropy from the operating system, buffered.
pub struct OsEntropy {
    buf: [u64; 32],
    next: usize,
}

impl OsEntropy {
    pub fn new() -> Self {
        Self { buf: [0; 32], next: 32 }
    }
}

impl Default for OsEntropy {
    fn default() -> Self {
        Self::new()
    }
}

impl EntropySource for OsEntropy {
    fn next_u64(&mut self) -> u64 {
        if self.next == self.buf.len() {
            let mut bytes = [0u8; 256];
            // Without OS entropy no live draw can be made fairly: this is a real fault.
            getrandom::fill(&mut bytes).expect("the operating system's entropy source failed");
            for (i, chunk) in bytes.chunks_exact(8).enumerate() {
                self.buf[i] = u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
            }
            self.next = 0;
        }
        let v = self.buf[self.next];
        self.next += 1;
        v
    }
}

pub use juegoland_api::random_uuid;

/// A rules fault as logs and error messages show it: a digest and a length, never the text.
/// A fault's message may be written by the game's rules or come from decoding its data, so it
/// can describe hidden state (a ship's cells in a failed placement check); it stays in the
/// process. Equal messages give equal digests, so one fault seen many times is one line to
/// look for; the game's own tests (`juegoland-conformance`) show the text.
pub fn redacted(fault: &str) -> String {
    use std::hash::{Hash, Hasher};
    // SipHash with fixed keys: the same digest for the same message in every process of a
    // build, and nothing of the message recoverable from it.
    let mut hasher = std::hash::DefaultHasher::new();
    fault.hash(&mut hasher);
    format!("rules fault {:016x} ({} bytes; its message is not logged)", hasher.finish(), fault.len())
}
