//! Placement of matches on nodes by rendezvous (highest random weight) hashing.
//!
//! Every node gets a score per match, `score(node_id, match_id)`, and the match belongs to
//! the live member with the highest score. Compared with a ring of virtual nodes this needs
//! no tuning and moves the minimum when the membership changes: a joining node takes, from
//! every other node, exactly the matches it now wins (≈ 1/n of them), and a leaving node's
//! matches are spread over the others while no other match moves. Looking up an owner costs
//! one hash per member, which is nothing at the cluster sizes the engine targets.
//!
//! The ring is a pure function of the member SET: [`Ring::new`] sorts the members by
//! `node_id` and keeps one per id, so every router and node that read the same rows place
//! every match on the same node.

use uuid::Uuid;

/// A live node of the cluster, as the membership registry lists it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Member {
    /// The node's stable name (`node-1`), the key of its row in the registry.
    pub node_id: String,
    /// Which run of the node holds the lease: a new random uuid every time the node joins.
    pub incarnation: Uuid,
    /// The node's gRPC URL (`http://127.0.0.2:7100`).
    pub address: String,
}

/// The placement of matches on a set of members. Immutable; build a new one when the
/// membership changes (the membership watcher publishes it as an `Arc<Ring>`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ring {
    /// Sorted by `node_id`, one per id.
    members: Vec<Member>,
    /// `node_hash(members[i].node_id)`, computed once.
    hashes: Vec<u64>,
}

impl Ring {
    /// The ring of `members`, sorted by `node_id`. If a node id appears more than once, the
    /// entry that is least by (incarnation, address) is kept, so the ring never depends on
    /// the order of the list.
    pub fn new(mut members: Vec<Member>) -> Ring {
        members.sort_by(|a, b| {
            (a.node_id.as_str(), a.incarnation, a.address.as_str()).cmp(&(
                b.node_id.as_str(),
                b.incarnation,
                b.address.as_str(),
            ))
        });
        members.dedup_by(|later, first| later.node_id == first.node_id);
        let hashes = members.iter().map(|m| node_hash(&m.node_id)).collect();
        Ring { members, hashes }
    }

    /// The ring with no members: it places nothing.
    pub fn empty() -> Ring {
        Ring::default()
    }

    /// The member that owns `match_id`: the one with the highest score (ties, which need
    /// two equal 64-bit scores, go to the smaller `node_id`). `None` when the ring is empty.
    pub fn owner(&self, match_id: Uuid) -> Option<&Member> {
        let (hi, lo) = match_id.as_u64_pair();
        let mut best: Option<(u64, usize)> = None;
        for (i, &h) in self.hashes.iter().enumerate() {
            let s = score(h, hi, lo);
            // Members are sorted by node_id, so keeping the first of equal scores keeps the
            // smaller node_id.
            if best.is_none_or(|(top, _)| s > top) {
                best = Some((s, i));
            }
        }
        best.map(|(_, i)| &self.members[i])
    }

    /// The members, sorted by `node_id`.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The member called `node_id`, if it is in the ring.
    pub fn get(&self, node_id: &str) -> Option<&Member> {
        self.members.binary_search_by(|m| m.node_id.as_str().cmp(node_id)).ok().map(|i| &self.members[i])
    }

    /// Whether a member called `node_id` is in the ring.
    pub fn contains(&self, node_id: &str) -> bool {
        self.get(node_id).is_some()
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

impl FromIterator<Member> for Ring {
    fn from_iter<I: IntoIterator<Item = Member>>(iter: I) -> Ring {
        Ring::new(iter.into_iter().collect())
    }
}

// The score must be the same on every node, platform and Rust release, so it is fixed
// arithmetic rather than std's `DefaultHasher` (whose algorithm may change between
// releases): FNV-1a spreads the node id over 64 bits and splitmix64's finalizer, a bijective
// avalanche mixer (each input bit flips each output bit with probability ≈ 1/2), is applied
// after folding in each half of the match id, so the scores of different nodes for one
// match behave as independent uniform draws — which is all rendezvous hashing needs.

/// FNV-1a (64-bit) of the node id, then mixed: computed once per member.
fn node_hash(node_id: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let fnv = node_id.bytes().fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME));
    mix64(fnv)
}

/// The weight of a node (by its [`node_hash`]) for a match (by the two halves of its uuid).
fn score(node: u64, hi: u64, lo: u64) -> u64 {
    mix64(mix64(node ^ hi) ^ lo)
}

/// The splitmix64 finalizer (Steele, Lea and Flood, 2014).
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    const MATCHES: usize = 100_000;

    fn member(i: usize) -> Member {
        Member {
            node_id: format!("node-{i}"),
            incarnation: Uuid::from_u64_pair(0, i as u64),
            address: format!("http://127.0.0.{i}:7100"),
        }
    }

    fn ring(ids: impl IntoIterator<Item = usize>) -> Ring {
        ids.into_iter().map(member).collect()
    }

    /// `n` version-4 match ids from a seeded splitmix64 stream: random-looking and the same
    /// on every run, so the printed figures are reproducible.
    fn match_ids(seed: u64, n: usize) -> Vec<Uuid> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            mix64(state)
        };
        (0..n)
            .map(|_| {
                let mut bytes = [0u8; 16];
                bytes[..8].copy_from_slice(&next().to_le_bytes());
                bytes[8..].copy_from_slice(&next().to_le_bytes());
                uuid::Builder::from_random_bytes(bytes).into_uuid()
            })
            .collect()
    }

    fn owners<'r>(ring: &'r Ring, ids: &[Uuid]) -> Vec<&'r str> {
        ids.iter().map(|&id| ring.owner(id).expect("a non-empty ring").node_id.as_str()).collect()
    }

    /// Matches per node, and the largest deviation from the fair share, in percent of it.
    fn balance(ring: &Ring, ids: &[Uuid]) -> (BTreeMap<String, usize>, f64) {
        let mut counts: BTreeMap<String, usize> = ring.members().iter().map(|m| (m.node_id.clone(), 0)).collect();
        for owner in owners(ring, ids) {
            *counts.get_mut(owner).expect("the owner is a member") += 1;
        }
        let fair = ids.len() as f64 / ring.len() as f64;
        let worst = counts.values().map(|&c| (c as f64 - fair).abs() / fair * 100.0).fold(0.0, f64::max);
        (counts, worst)
    }

    /// How many matches changed owner between `before` and `after`, and the owners they
    /// moved to.
    fn movement(before: &Ring, after: &Ring, ids: &[Uuid]) -> (usize, BTreeMap<String, usize>) {
        let mut to: BTreeMap<String, usize> = BTreeMap::new();
        let mut moved = 0;
        for (a, b) in owners(before, ids).into_iter().zip(owners(after, ids)) {
            if a != b {
                moved += 1;
                *to.entry(b.to_owned()).or_default() += 1;
            }
        }
        (moved, to)
    }

    #[test]
    fn the_hash_is_pinned() {
        // Changing the score function re-places matches differently on nodes that run
        // different builds of a rolling upgrade, so these values must never change. They were
        // computed with an independent transcription of the functions (Python integers
        // masked to 64 bits).
        assert_eq!(node_hash(""), 0xf52a_15e9_a9b5_e89b);
        assert_eq!(node_hash("node-1"), 0x1395_0d4e_f307_e655);
        assert_eq!(score(node_hash("node-1"), 1, 2), 0x382a_298a_c899_e14f);
        let id = Uuid::from_u128(0x0123_4567_89ab_4def_8123_4567_89ab_cdef);
        assert_eq!(ring(1..=5).owner(id).map(|m| m.node_id.as_str()), Some("node-4"));
    }

    #[test]
    fn an_empty_ring_places_nothing() {
        let ring = Ring::empty();
        assert!(ring.is_empty());
        assert_eq!(ring.len(), 0);
        assert_eq!(ring.owner(Uuid::nil()), None);
        assert!(!ring.contains("node-1"));
    }

    #[test]
    fn lookups() {
        let ring = ring([3, 1, 2]);
        let ids: Vec<&str> = ring.members().iter().map(|m| m.node_id.as_str()).collect();
        assert_eq!(ids, ["node-1", "node-2", "node-3"]);
        assert_eq!(ring.len(), 3);
        assert!(ring.contains("node-2") && !ring.contains("node-4"));
        assert_eq!(ring.get("node-3"), Some(&member(3)));
    }

    #[test]
    fn duplicates_keep_one_entry_whatever_the_order() {
        let mut other = member(1);
        other.incarnation = Uuid::from_u64_pair(9, 9);
        let a = Ring::new(vec![member(1), other.clone(), member(2)]);
        let b = Ring::new(vec![other, member(2), member(1)]);
        assert_eq!(a, b);
        assert_eq!(a.len(), 2);
        assert_eq!(a.get("node-1"), Some(&member(1)));
    }

    #[test]
    fn balance_over_3_and_5_nodes_is_within_5_percent() {
        let ids = match_ids(1, MATCHES);
        for n in [3, 5] {
            let (counts, worst) = balance(&ring(1..=n), &ids);
            assert!(worst <= 5.0, "{n} nodes: {counts:?} deviates {worst:.2}% from the fair share");
        }
    }

    #[test]
    fn a_joining_node_takes_about_a_quarter_and_only_takes() {
        let ids = match_ids(2, MATCHES);
        let (moved, to) = movement(&ring(1..=3), &ring(1..=4), &ids);
        let share = moved as f64 / ids.len() as f64;
        assert!((0.20..=0.30).contains(&share), "{share} of the matches moved");
        assert_eq!(to.keys().collect::<Vec<_>>(), ["node-4"], "every moved match goes to the new node");
    }

    #[test]
    fn a_leaving_node_moves_its_matches_and_nothing_else() {
        let ids = match_ids(3, MATCHES);
        let (before, after) = (ring(1..=5), ring([1, 2, 4, 5]));
        for (&id, (a, b)) in ids.iter().zip(owners(&before, &ids).into_iter().zip(owners(&after, &ids))) {
            if a == "node-3" {
                assert_ne!(b, "node-3", "{id}");
            } else {
                assert_eq!(a, b, "{id} moved although its owner stayed");
            }
        }
    }

    /// Prints the figures quoted in `docs/benchmarks.md`; run it with
    /// `cargo nextest run -p juegoland-cluster --no-capture ring_figures`.
    #[test]
    fn ring_figures() {
        let ids = match_ids(42, MATCHES);
        println!("rendezvous ring, {MATCHES} match ids (seeded v4 uuids):");
        for n in [3, 4, 5] {
            let (counts, worst) = balance(&ring(1..=n), &ids);
            let counts: Vec<String> = counts.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!(
                "  balance over {n} nodes: {} (fair {}); worst deviation {worst:.2}%",
                counts.join(" "),
                MATCHES / n
            );
            assert!(worst <= 5.0);
        }
        for (from, to) in [(3, 4), (4, 5)] {
            let (moved, dest) = movement(&ring(1..=from), &ring(1..=to), &ids);
            let pct = moved as f64 / MATCHES as f64 * 100.0;
            println!(
                "  join {from} -> {to} nodes: {moved} moved ({pct:.2}%, ideal {:.2}%), all to the new node: {}",
                100.0 / to as f64,
                dest.len() == 1
            );
            assert_eq!(dest.len(), 1);
        }
        for (from, gone) in [(4, 4), (5, 3)] {
            let before = ring(1..=from);
            let after = ring((1..=from).filter(|&i| i != gone));
            let (moved, _) = movement(&before, &after, &ids);
            let owned = owners(&before, &ids).iter().filter(|&&o| o == format!("node-{gone}")).count();
            println!(
                "  leave {from} -> {} nodes (node-{gone} gone): {moved} moved ({:.2}%), node-{gone} owned {owned}",
                from - 1,
                moved as f64 / MATCHES as f64 * 100.0
            );
            assert_eq!(moved, owned);
        }
    }

    fn uuid_strategy() -> impl Strategy<Value = Uuid> {
        any::<u128>().prop_map(Uuid::from_u128)
    }

    /// 1 to 8 distinct members drawn from node-0 … node-29.
    fn members_strategy() -> impl Strategy<Value = Vec<Member>> {
        proptest::collection::btree_set(0usize..30, 1..=8).prop_map(|ids| ids.into_iter().map(member).collect())
    }

    proptest! {
        #[test]
        fn the_order_of_the_member_list_does_not_matter(
            (members, shuffled) in members_strategy().prop_flat_map(|m| (Just(m.clone()), Just(m).prop_shuffle())),
            ids in proptest::collection::vec(uuid_strategy(), 1..64),
        ) {
            let (a, b) = (Ring::new(members), Ring::new(shuffled));
            prop_assert_eq!(&a, &b);
            for id in ids {
                prop_assert_eq!(a.owner(id), b.owner(id));
            }
        }

        #[test]
        fn a_join_only_moves_matches_to_the_new_node(
            members in members_strategy(),
            new in 30usize..40,
            ids in proptest::collection::vec(uuid_strategy(), 1..64),
        ) {
            let before = Ring::new(members.clone());
            let mut grown = members;
            grown.push(member(new));
            let after = Ring::new(grown);
            for id in ids {
                let (a, b) = (before.owner(id).unwrap(), after.owner(id).unwrap());
                prop_assert!(a == b || b.node_id == format!("node-{new}"), "{} moved from {} to {}", id, a.node_id, b.node_id);
            }
        }

        #[test]
        fn a_leave_only_moves_the_leavers_matches(
            members in members_strategy().prop_filter("two or more", |m| m.len() >= 2),
            pick in any::<prop::sample::Index>(),
            ids in proptest::collection::vec(uuid_strategy(), 1..64),
        ) {
            let gone = members[pick.index(members.len())].node_id.clone();
            let before = Ring::new(members.clone());
            let after = Ring::new(members.into_iter().filter(|m| m.node_id != gone).collect());
            for id in ids {
                let (a, b) = (before.owner(id).unwrap(), after.owner(id).unwrap());
                if a.node_id == gone {
                    prop_assert_ne!(&b.node_id, &gone);
                } else {
                    prop_assert_eq!(a, b);
                }
            }
        }
    }
}
