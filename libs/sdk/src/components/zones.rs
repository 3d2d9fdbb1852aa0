//! Zones: where every card and piece of a match is.
//!
//! [`Zones`] maps a zone id to a [`Zone`]: an optional owner, whether order matters, a
//! declared [`Visibility`] and the instance ids it holds. Every instance is in exactly one
//! zone ([`check_conservation`] proves it); setup puts them all in [`SUPPLY`].
//!
//! Every operation takes `&self` and returns a NEW `Zones` or an error: the input is never
//! touched and a failed move leaves nothing half done.
//!
//! # Order and "top"
//!
//! `cards[0]` is the bottom of a zone and the LAST element is its top. [`Zones::move_top`]
//! lifts the top `n` cards as one block and puts them on top of the target in the same
//! order (a Solitario stack keeps its sequence); to deal one card at a time, move the top 1
//! repeatedly. Moved cards always land on top (at the end) of the target.
//!
//! # Visibility is not a projection
//!
//! `visibility` documents who may see the cards and helps validation, but views are built
//! by the game's `project`. Instance ids are internal: a view of a card the recipient may
//! not see gives a count or an opaque per-revision token, never the [`InstanceId`], and a
//! [`ZoneError`] (which names instance ids) is never sent to a recipient as it is.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::definition::is_valid_id;
use super::instances::{Instance, InstanceId};
use crate::position::Seat;
use crate::random::{RandomError, Randomness};

/// The zone setup fills with every instance, in [`ComponentSet`](super::ComponentSet) order.
pub const SUPPLY: &str = "supply";

/// Who may see the cards of a zone (declared; enforced by `project`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Visibility {
    /// Everyone sees the faces (a foundation, a trick on the table).
    Public,
    /// Only the owner sees the faces; others see a count (a hand).
    Owner,
    /// Nobody sees the faces; everyone sees a count (the stock, the supply).
    Hidden,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Zone {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Seat>,
    /// Whether the order of `cards` is meaningful (a pile) or not (a hand kept as a set).
    pub ordered: bool,
    pub visibility: Visibility,
    /// Bottom first; the last element is the top.
    pub cards: Vec<InstanceId>,
}

impl Zone {
    /// An empty zone.
    pub fn new(owner: Option<Seat>, ordered: bool, visibility: Visibility) -> Self {
        Self { owner, ordered, visibility, cards: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.cards.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cards.is_empty()
    }

    /// The top card (the last element), if any.
    pub fn top(&self) -> Option<&InstanceId> {
        self.cards.last()
    }

    pub fn contains(&self, card: &InstanceId) -> bool {
        self.cards.contains(card)
    }
}

/// Why a zone operation was refused. Nothing changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ZoneError {
    #[error("no zone {0:?}")]
    UnknownZone(String),
    #[error("zone {0:?} already exists: choose another id")]
    DuplicateZone(String),
    #[error("zone id {0:?} is invalid: use 1-64 characters from A-Z a-z 0-9 - _ . :")]
    InvalidZoneId(String),
    #[error("new zone {0:?} has cards: create zones empty and move cards into them")]
    NewZoneNotEmpty(String),
    #[error("zone {0:?} is visible to its owner but has none: give it an owner or another visibility")]
    OwnerVisibilityWithoutOwner(String),
    #[error("source and target are both zone {0:?}")]
    SameZone(String),
    #[error("card {0} is requested twice in one move")]
    DuplicateInRequest(InstanceId),
    #[error("card {card} is not in zone {zone:?}")]
    NotInZone { card: InstanceId, zone: String },
    #[error("zone {zone:?} has {available} cards, {requested} requested")]
    NotEnoughCards { zone: String, requested: usize, available: usize },
    #[error("zone {0:?} is unordered, so it has no top: move named cards instead")]
    NotOrdered(String),
    #[error("shuffle a zone: {0}")]
    Random(#[from] RandomError),
}

/// Why zones do not hold each instance exactly once.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConservationError {
    #[error("instance {0} is in no zone")]
    Missing(InstanceId),
    #[error("instance {card} is in zone {first:?} and again in zone {second:?}")]
    Duplicated { card: InstanceId, first: String, second: String },
    #[error("zone {zone:?} holds {card}, which is not an instance of this match")]
    Unknown { card: InstanceId, zone: String },
}

/// Every zone of a match by id. Serialized as a JSON object of zones.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Zones(BTreeMap<String, Zone>);

impl Zones {
    /// No zones at all.
    pub fn new() -> Self {
        Self::default()
    }

    /// The setup state: one zone [`SUPPLY`] (ordered, hidden, no owner) holding every
    /// instance in the given order. Rules add their zones and deal from it.
    pub fn setup(instances: &[Instance]) -> Self {
        let mut supply = Zone::new(None, true, Visibility::Hidden);
        supply.cards = instances.iter().map(|i| i.id.clone()).collect();
        Self(BTreeMap::from([(SUPPLY.to_owned(), supply)]))
    }

    /// The zones plus a new, empty zone `id`.
    pub fn with_zone(&self, id: &str, zone: Zone) -> Result<Zones, ZoneError> {
        if !is_valid_id(id) {
            return Err(ZoneError::InvalidZoneId(id.to_owned()));
        }
        if self.0.contains_key(id) {
            return Err(ZoneError::DuplicateZone(id.to_owned()));
        }
        if !zone.cards.is_empty() {
            return Err(ZoneError::NewZoneNotEmpty(id.to_owned()));
        }
        if zone.visibility == Visibility::Owner && zone.owner.is_none() {
            return Err(ZoneError::OwnerVisibilityWithoutOwner(id.to_owned()));
        }
        let mut next = self.clone();
        next.0.insert(id.to_owned(), zone);
        Ok(next)
    }

    pub fn zone(&self, id: &str) -> Option<&Zone> {
        self.0.get(id)
    }

    /// The zones in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Zone)> {
        self.0.iter().map(|(id, z)| (id.as_str(), z))
    }

    /// The number of cards in zone `id` (0 for an unknown zone).
    pub fn count(&self, id: &str) -> usize {
        self.0.get(id).map_or(0, Zone::len)
    }

    /// The zone that holds `card`.
    pub fn zone_of(&self, card: &InstanceId) -> Option<&str> {
        self.0.iter().find(|(_, z)| z.contains(card)).map(|(id, _)| id.as_str())
    }

    /// Moves the named cards from `from` to the top of `to`, in the order requested; the
    /// cards left in `from` keep their order. Refused if a zone is unknown, `from == to`, a
    /// card is requested twice or is not in `from`. An empty request is a no-op.
    pub fn move_cards(&self, from: &str, to: &str, cards: &[InstanceId]) -> Result<Zones, ZoneError> {
        self.check_pair(from, to)?;
        let mut requested = BTreeSet::new();
        for card in cards {
            if !requested.insert(card) {
                return Err(ZoneError::DuplicateInRequest(card.clone()));
            }
        }
        let source: BTreeSet<&InstanceId> = self.0[from].cards.iter().collect();
        if let Some(missing) = cards.iter().find(|c| !source.contains(c)) {
            return Err(ZoneError::NotInZone { card: missing.clone(), zone: from.to_owned() });
        }
        let mut next = self.clone();
        next.zone_mut(from).cards.retain(|c| !requested.contains(c));
        next.zone_mut(to).cards.extend(cards.iter().cloned());
        Ok(next)
    }

    /// Moves the top `n` cards of `from` (the last `n` elements) as one block onto the top
    /// of `to`, keeping their order. `from` must be ordered and hold at least `n` cards.
    pub fn move_top(&self, from: &str, to: &str, n: usize) -> Result<Zones, ZoneError> {
        self.check_pair(from, to)?;
        let source = &self.0[from];
        if !source.ordered {
            return Err(ZoneError::NotOrdered(from.to_owned()));
        }
        if n > source.len() {
            return Err(ZoneError::NotEnoughCards { zone: from.to_owned(), requested: n, available: source.len() });
        }
        let mut next = self.clone();
        let from_zone = next.zone_mut(from);
        let lifted = from_zone.cards.split_off(from_zone.cards.len() - n);
        next.zone_mut(to).cards.extend(lifted);
        Ok(next)
    }

    /// Moves every card of `from` onto the top of `to`, keeping their order.
    pub fn move_all(&self, from: &str, to: &str) -> Result<Zones, ZoneError> {
        self.check_pair(from, to)?;
        let mut next = self.clone();
        let lifted = std::mem::take(&mut next.zone_mut(from).cards);
        next.zone_mut(to).cards.extend(lifted);
        Ok(next)
    }

    /// Zone `id` in a uniformly random order, drawn with `label` through
    /// [`Randomness::shuffle`] (so the permutation is in the private trace and replays).
    pub fn shuffle_zone(&self, id: &str, label: &str, random: &mut Randomness<'_>) -> Result<Zones, ZoneError> {
        let zone = self.0.get(id).ok_or_else(|| ZoneError::UnknownZone(id.to_owned()))?;
        let shuffled = random.shuffle(label, &zone.cards)?;
        let mut next = self.clone();
        next.zone_mut(id).cards = shuffled;
        Ok(next)
    }

    /// Zone `id` turned over: bottom becomes top (a waste recycled into the stock).
    pub fn reverse_zone(&self, id: &str) -> Result<Zones, ZoneError> {
        if !self.0.contains_key(id) {
            return Err(ZoneError::UnknownZone(id.to_owned()));
        }
        let mut next = self.clone();
        next.zone_mut(id).cards.reverse();
        Ok(next)
    }

    fn check_pair(&self, from: &str, to: &str) -> Result<(), ZoneError> {
        for id in [from, to] {
            if !self.0.contains_key(id) {
                return Err(ZoneError::UnknownZone(id.to_owned()));
            }
        }
        if from == to {
            return Err(ZoneError::SameZone(from.to_owned()));
        }
        Ok(())
    }

    /// Only for ids already checked to exist.
    fn zone_mut(&mut self, id: &str) -> &mut Zone {
        self.0.get_mut(id).expect("zone id checked before mutation")
    }
}

/// Checks that every instance is in exactly one zone and that zones hold nothing else: no
/// card was lost, duplicated or created. Run it in `validate_position` and in tests.
pub fn check_conservation(zones: &Zones, instances: &[Instance]) -> Result<(), ConservationError> {
    let known: BTreeSet<&InstanceId> = instances.iter().map(|i| &i.id).collect();
    let mut located: BTreeMap<&InstanceId, &str> = BTreeMap::new();
    for (zone_id, zone) in zones.iter() {
        for card in &zone.cards {
            if !known.contains(card) {
                return Err(ConservationError::Unknown { card: card.clone(), zone: zone_id.to_owned() });
            }
            if let Some(first) = located.insert(card, zone_id) {
                return Err(ConservationError::Duplicated {
                    card: card.clone(),
                    first: first.to_owned(),
                    second: zone_id.to_owned(),
                });
            }
        }
    }
    match instances.iter().find(|i| !located.contains_key(&i.id)) {
        Some(missing) => Err(ConservationError::Missing(missing.id.clone())),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::components::{ComponentDeclaration, ComponentDefinition, ComponentSet, CustomRegistry, poker52};
    use crate::random::{ScriptedEntropy, SplitMix64};

    fn deck(copies: u32) -> ComponentSet {
        let decl = ComponentDeclaration {
            component_id: "mainDeck".into(),
            definition: ComponentDefinition::Deck(poker52()),
            copies,
        };
        ComponentSet::load(vec![decl], &CustomRegistry::new()).unwrap()
    }

    fn table(set: &ComponentSet) -> Zones {
        Zones::setup(set.instances())
            .with_zone("stock", Zone::new(None, true, Visibility::Hidden))
            .unwrap()
            .with_zone("hand", Zone::new(Some("p0".into()), false, Visibility::Owner))
            .unwrap()
            .with_zone("pile", Zone::new(None, true, Visibility::Public))
            .unwrap()
    }

    fn id(card: &str) -> InstanceId {
        InstanceId::card("mainDeck", 0, card)
    }

    #[test]
    fn setup_puts_everything_in_supply() {
        let set = deck(2);
        let zones = Zones::setup(set.instances());
        assert_eq!(zones.count(SUPPLY), 104);
        assert_eq!(zones.zone(SUPPLY).unwrap().top(), Some(&InstanceId::card("mainDeck", 1, "KS")));
        assert_eq!(check_conservation(&zones, set.instances()), Ok(()));
        assert_eq!(check_conservation(&table(&set), set.instances()), Ok(()));
    }

    #[test]
    fn moves_return_new_zones_and_keep_order() {
        let set = deck(1);
        let zones = table(&set);
        let before = zones.clone();

        let dealt = zones.move_top(SUPPLY, "stock", 3).unwrap();
        assert_eq!(zones, before);
        assert_eq!(dealt.zone("stock").unwrap().cards, [id("JS"), id("QS"), id("KS")]);
        assert_eq!(dealt.zone(SUPPLY).unwrap().top(), Some(&id("10S")));

        let named = dealt.move_cards(SUPPLY, "hand", &[id("AH"), id("2C")]).unwrap();
        assert_eq!(named.zone("hand").unwrap().cards, [id("AH"), id("2C")]);
        assert_eq!(named.zone_of(&id("AH")), Some("hand"));
        assert_eq!(named.count(SUPPLY), 47);

        let all = named.move_all("stock", "pile").unwrap();
        assert!(all.zone("stock").unwrap().is_empty());
        assert_eq!(all.zone("pile").unwrap().cards, [id("JS"), id("QS"), id("KS")]);
        let turned = all.reverse_zone("pile").unwrap();
        assert_eq!(turned.zone("pile").unwrap().cards, [id("KS"), id("QS"), id("JS")]);
        assert_eq!(check_conservation(&turned, set.instances()), Ok(()));
        assert_eq!(all.move_top("pile", "stock", 0).unwrap(), all);
    }

    #[test]
    fn invalid_moves_are_refused() {
        let set = deck(1);
        let zones = table(&set);
        let cases = [
            (zones.move_top("nowhere", "stock", 1), ZoneError::UnknownZone("nowhere".into())),
            (zones.move_all(SUPPLY, "nowhere"), ZoneError::UnknownZone("nowhere".into())),
            (zones.move_all("stock", "stock"), ZoneError::SameZone("stock".into())),
            (
                zones.move_top("stock", "pile", 1),
                ZoneError::NotEnoughCards { zone: "stock".into(), requested: 1, available: 0 },
            ),
            (
                zones.move_top(SUPPLY, "pile", 53),
                ZoneError::NotEnoughCards { zone: SUPPLY.into(), requested: 53, available: 52 },
            ),
            (zones.move_top("hand", "pile", 0), ZoneError::NotOrdered("hand".into())),
            (zones.move_cards(SUPPLY, "hand", &[id("AS"), id("AS")]), ZoneError::DuplicateInRequest(id("AS"))),
            (
                zones.move_cards("stock", "hand", &[id("AS")]),
                ZoneError::NotInZone { card: id("AS"), zone: "stock".into() },
            ),
            (
                zones.move_cards(SUPPLY, "hand", &[id("AS"), id("ZZ")]),
                ZoneError::NotInZone { card: id("ZZ"), zone: SUPPLY.into() },
            ),
            (
                zones.with_zone("stock", Zone::new(None, true, Visibility::Hidden)),
                ZoneError::DuplicateZone("stock".into()),
            ),
            (zones.with_zone("a b", Zone::new(None, true, Visibility::Hidden)), ZoneError::InvalidZoneId("a b".into())),
            (
                zones.with_zone("h2", Zone::new(None, false, Visibility::Owner)),
                ZoneError::OwnerVisibilityWithoutOwner("h2".into()),
            ),
            (
                zones.with_zone("forged", Zone { cards: vec![id("AS")], ..Zone::new(None, true, Visibility::Public) }),
                ZoneError::NewZoneNotEmpty("forged".into()),
            ),
            (zones.reverse_zone("nowhere"), ZoneError::UnknownZone("nowhere".into())),
        ];
        for (result, expected) in cases {
            assert_eq!(result, Err(expected));
        }
        assert_eq!(zones, table(&set));
    }

    #[test]
    fn conservation_detects_loss_duplication_and_creation() {
        let set = deck(1);
        let zones = table(&set);
        let json = |z: &Zones| serde_json::to_value(z).unwrap();

        let mut lost = json(&zones);
        lost["supply"]["cards"].as_array_mut().unwrap().pop();
        let lost: Zones = serde_json::from_value(lost).unwrap();
        assert_eq!(check_conservation(&lost, set.instances()), Err(ConservationError::Missing(id("KS"))));

        let mut doubled = json(&zones);
        doubled["pile"]["cards"] = serde_json::json!(["mainDeck/0/AS"]);
        let doubled: Zones = serde_json::from_value(doubled).unwrap();
        assert_eq!(
            check_conservation(&doubled, set.instances()),
            Err(ConservationError::Duplicated { card: id("AS"), first: "pile".into(), second: SUPPLY.into() })
        );

        let mut created = json(&zones);
        created["pile"]["cards"] = serde_json::json!(["mainDeck/1/AS"]);
        let created: Zones = serde_json::from_value(created).unwrap();
        assert_eq!(
            check_conservation(&created, set.instances()),
            Err(ConservationError::Unknown { card: InstanceId::card("mainDeck", 1, "AS"), zone: "pile".into() })
        );
    }

    #[test]
    fn zones_json_is_strict() {
        let zones = table(&deck(1)).move_top(SUPPLY, "hand", 1).unwrap();
        let value = serde_json::to_value(&zones).unwrap();
        assert_eq!(value["hand"]["owner"], "p0");
        assert_eq!(value["hand"]["visibility"], "owner");
        assert_eq!(value["hand"]["cards"], serde_json::json!(["mainDeck/0/KS"]));
        assert_eq!(serde_json::from_value::<Zones>(value.clone()).unwrap(), zones);
        let mut extra = value;
        extra["hand"]["faceUp"] = serde_json::json!(true);
        assert!(serde_json::from_value::<Zones>(extra).is_err());
    }

    #[test]
    fn shuffle_replays_from_the_trace() {
        let set = deck(1);
        let zones = table(&set);
        let mut entropy = SplitMix64(42);
        let mut live = Randomness::live(&mut entropy);
        let shuffled = zones.shuffle_zone(SUPPLY, "shuffle-supply", &mut live).unwrap();
        let trace = live.finish().unwrap();
        assert_eq!(zones, table(&set));
        assert_ne!(shuffled, zones);
        assert_eq!(check_conservation(&shuffled, set.instances()), Ok(()));

        let mut replay = Randomness::replay(&trace);
        assert_eq!(zones.shuffle_zone(SUPPLY, "shuffle-supply", &mut replay).unwrap(), shuffled);
        assert_eq!(replay.finish().unwrap(), trace);

        let mut other = Randomness::replay(&trace);
        assert!(matches!(
            zones.shuffle_zone("stock", "shuffle-supply", &mut other),
            Err(ZoneError::Random(RandomError::ReplayMismatch { .. }))
        ));
        let mut e = ScriptedEntropy::new(vec![0]);
        let mut r = Randomness::live(&mut e);
        assert_eq!(zones.shuffle_zone("nowhere", "x", &mut r), Err(ZoneError::UnknownZone("nowhere".into())));
    }

    /// A zone move as the property test generates it; indices pick zones and cards,
    /// including ids that do not exist.
    #[derive(Clone, Debug)]
    enum Op {
        Named { from: usize, to: usize, cards: Vec<usize> },
        Top { from: usize, to: usize, n: usize },
        All { from: usize, to: usize },
        Reverse { zone: usize },
    }

    const ZONE_IDS: [&str; 5] = [SUPPLY, "stock", "hand", "pile", "ghost"];

    fn op() -> impl Strategy<Value = Op> {
        let zone = 0..ZONE_IDS.len();
        prop_oneof![
            (zone.clone(), zone.clone(), prop::collection::vec(0..110usize, 0..5))
                .prop_map(|(from, to, cards)| Op::Named { from, to, cards }),
            (zone.clone(), zone.clone(), 0..60usize).prop_map(|(from, to, n)| Op::Top { from, to, n }),
            (zone.clone(), zone.clone()).prop_map(|(from, to)| Op::All { from, to }),
            zone.prop_map(|zone| Op::Reverse { zone }),
        ]
    }

    proptest! {
        #[test]
        fn any_sequence_of_moves_conserves_instances(ops in prop::collection::vec(op(), 0..40)) {
            let set = deck(2);
            // Candidate cards: the 104 real instances plus a few that do not exist.
            let mut universe: Vec<InstanceId> = set.instances().iter().map(|i| i.id.clone()).collect();
            universe.extend((0..6).map(|k| InstanceId::card("mainDeck", 2, &format!("X{k}"))));
            let mut zones = table(&set);
            for op in ops {
                let before = zones.clone();
                let result = match &op {
                    Op::Named { from, to, cards } => {
                        let cards: Vec<InstanceId> = cards.iter().map(|i| universe[*i].clone()).collect();
                        zones.move_cards(ZONE_IDS[*from], ZONE_IDS[*to], &cards)
                    }
                    Op::Top { from, to, n } => zones.move_top(ZONE_IDS[*from], ZONE_IDS[*to], *n),
                    Op::All { from, to } => zones.move_all(ZONE_IDS[*from], ZONE_IDS[*to]),
                    Op::Reverse { zone } => zones.reverse_zone(ZONE_IDS[*zone]),
                };
                // The input is never mutated, whatever the outcome.
                prop_assert_eq!(&zones, &before);
                match result {
                    Ok(next) => {
                        prop_assert_eq!(check_conservation(&next, set.instances()), Ok(()));
                        let ids: Vec<&str> = next.iter().map(|(id, _)| id).collect();
                        let before_ids: Vec<&str> = before.iter().map(|(id, _)| id).collect();
                        prop_assert_eq!(ids, before_ids);
                        zones = next;
                    }
                    // A refused move changes nothing: we keep `zones`, already proven equal
                    // to `before`, and it still conserves every instance.
                    Err(_) => prop_assert_eq!(check_conservation(&zones, set.instances()), Ok(())),
                }
            }
        }
    }
}
