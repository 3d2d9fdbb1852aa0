//! The per-match FIFO of `queue` commands (engine spec § Real-time commands): a bounded
//! number of real-time commands may wait for (or be in) a match actor's hands at once.
//!
//! The actor's mailbox is the FIFO itself — arrival order is acceptance order, the same on
//! a node of the cluster as in the all-in-one, since both reach the actor through
//! `Host::call` — and this module bounds it: a `queue` command takes a [`Ticket`] before it
//! is sent to the actor; with `HostConfig::queue_capacity` tickets out, the next one is
//! refused with `MatchError::RateLimited` (`RATE_LIMITED`, retry the same command) and not
//! sent. A ticket travels inside the actor's message and is returned when the last of its
//! clones drops: when the actor has answered (or the message was never delivered) and the
//! caller has its answer, so a caller that goes away early keeps its place counted until
//! the actor is done with the command.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use uuid::Uuid;

/// The waiting `queue` commands of every match this host serves.
#[derive(Default)]
pub(crate) struct Queues {
    by_match: parking_lot::Mutex<HashMap<Uuid, Arc<AtomicUsize>>>,
}

/// One place in a match's FIFO, returned when the last clone drops.
#[derive(Clone, Debug)]
pub struct Ticket {
    _place: Arc<Place>,
}

#[derive(Debug)]
struct Place(Arc<AtomicUsize>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Queues {
    /// A place in `match_id`'s FIFO, or `None` when `capacity` commands already wait.
    pub(crate) fn admit(&self, match_id: Uuid, capacity: usize) -> Option<Ticket> {
        let counter = Arc::clone(self.by_match.lock().entry(match_id).or_default());
        let taken = counter.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < capacity).then_some(n + 1));
        taken.is_ok().then(|| Ticket { _place: Arc::new(Place(counter)) })
    }

    /// How many `queue` commands of `match_id` wait or are being decided.
    #[cfg(test)]
    pub(crate) fn waiting(&self, match_id: Uuid) -> usize {
        self.by_match.lock().get(&match_id).map_or(0, |c| c.load(Ordering::Acquire))
    }

    /// Forgets a match with nothing waiting (its actor stopped).
    pub(crate) fn forget(&self, match_id: Uuid) {
        let mut by_match = self.by_match.lock();
        if by_match.get(&match_id).is_some_and(|c| c.load(Ordering::Acquire) == 0) {
            by_match.remove(&match_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_fifo_refuses_until_a_place_is_returned() {
        let queues = Queues::default();
        let (m, other) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let tickets: Vec<_> = (0..16).map(|_| queues.admit(m, 16).expect("a free place")).collect();
        assert!(queues.admit(m, 16).is_none(), "the 17th waits for no place");
        assert!(queues.admit(other, 16).is_some(), "each match has its own FIFO");
        assert_eq!(queues.waiting(m), 16);
        let clone = tickets[0].clone();
        drop(tickets);
        assert_eq!(queues.waiting(m), 1, "a place is held while a clone (the actor's message) lives");
        assert!(queues.admit(m, 16).is_some());
        drop(clone);
        assert_eq!(queues.waiting(m), 0);
        queues.forget(m);
        assert!(queues.by_match.lock().get(&m).is_none());
    }
}
