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
pub(crate) struct Receipts(HashMap<Uuid, Vec<Receipt>>);

impl Receipts {
    pub(crate) fn new(all: Vec<Receipt>) -> Receipts {
        let mut receipts = Receipts::default();
        all.into_iter().for_each(|r| receipts.insert(r));
        receipts
    }

    pub(crate) fn get(&self, key: &ReceiptKey) -> Option<&Receipt> {
        self.0.get(&key.command_id)?.iter().find(|r| r.key == *key)
    }

    /// Adds a receipt just committed (a key is stored once: the store refuses a second).
    pub(crate) fn insert(&mut self, receipt: Receipt) {
        let same_id = self.0.entry(receipt.key.command_id).or_default();
        if !same_id.iter().any(|r| r.key == receipt.key) {
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
            outcome: ReceiptOutcome::Applied { revision },
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
    }
}
