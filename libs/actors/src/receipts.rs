//! The receipts of an active match, held by its actor, so judging a command (exact retry,
//! reused id) needs no store read on the hot path.
//!
//! Loaded from the store when the actor activates (`Store::receipts`), kept current by every
//! commit the actor makes (the owning actor is the match's only writer: the store's fences
//! refuse anyone else), dropped when the match cools (a quiet match stays small) and after a
//! commit whose outcome is unknown (it may or may not have stored its receipt); the next
//! command then loads them again.

use std::collections::HashMap;

use juegoland_core::{Receipt, ReceiptKey};
use uuid::Uuid;

/// A match's receipts by command id (a command id is unique per principal, so a handful of
/// principals may share one).
#[derive(Debug, Default)]
pub(crate) struct Receipts {
    by_id: HashMap<Uuid, Vec<Receipt>>,
    /// The highest command sequence a receipt carries (`queue` commands; 0: none).
    last_sequence: u64,
}

impl Receipts {
    pub(crate) fn new(all: Vec<Receipt>) -> Receipts {
        let mut receipts = Receipts::default();
        all.into_iter().for_each(|r| receipts.insert(r));
        receipts
    }

    pub(crate) fn get(&self, key: &ReceiptKey) -> Option<&Receipt> {
        self.by_id.get(&key.command_id)?.iter().find(|r| r.key == *key)
    }

    /// The highest command sequence any receipt of the match carries: a final rejection of
    /// a `queue` command writes no state, so its receipt alone remembers its sequence.
    pub(crate) fn last_sequence(&self) -> u64 {
        self.last_sequence
    }

    /// Adds a receipt just committed (a key is stored once: the store refuses a second).
    pub(crate) fn insert(&mut self, receipt: Receipt) {
        let same_id = self.by_id.entry(receipt.key.command_id).or_default();
        if !same_id.iter().any(|r| r.key == receipt.key) {
            self.last_sequence = self.last_sequence.max(receipt.outcome.sequence().unwrap_or(0));
            same_id.push(receipt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use juegoland_core::ReceiptOutcome;

    fn receipt(principal: &str, command_id: u128, revision: u64) -> Receipt {
        Receipt {
            key: ReceiptKey {
                match_id: Uuid::from_u128(1),
                principal: principal.into(),
                command_id: Uuid::from_u128(command_id),
            },
            fingerprint: format!("f{revision}"),
            outcome: ReceiptOutcome::applied(revision),
        }
    }

    #[test]
    fn a_receipt_is_found_by_its_whole_key() {
        let mut r = Receipts::new(vec![receipt("alice", 7, 1)]);
        r.insert(receipt("bob", 7, 2));
        r.insert(receipt("alice", 7, 9));
        assert_eq!(r.get(&receipt("alice", 7, 0).key).map(|r| r.fingerprint.as_str()), Some("f1"), "the first stays");
        assert_eq!(r.get(&receipt("bob", 7, 0).key).map(|r| r.fingerprint.as_str()), Some("f2"));
        assert_eq!(r.get(&receipt("carol", 7, 0).key), None);
        assert_eq!(r.get(&receipt("alice", 8, 0).key), None);
        assert_eq!(r.last_sequence(), 0, "no queue command yet");
    }

    #[test]
    fn the_last_sequence_is_the_highest_any_receipt_carries() {
        let mut rejected = receipt("alice", 1, 1);
        rejected.outcome = ReceiptOutcome::Rejected {
            code: juegoland_protocol::RejectionCode::IllegalAction,
            revision: 1,
            sequence: Some(7),
        };
        let mut applied = receipt("bob", 2, 2);
        applied.outcome = ReceiptOutcome::Applied { revision: 2, sequence: Some(5) };
        let mut r = Receipts::new(vec![applied, rejected]);
        assert_eq!(r.last_sequence(), 7);
        r.insert(receipt("carol", 3, 3));
        assert_eq!(r.last_sequence(), 7);
    }
}
