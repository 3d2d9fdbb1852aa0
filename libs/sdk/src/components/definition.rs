//! Component definitions: what a package declares, before any match exists.
//!
//! A definition is immutable data. [`ComponentDefinition::validate`] checks everything that
//! can be checked without trusted code (unique ids, positive weights, edges between existing
//! nodes, nothing empty); custom kinds are checked further by the
//! [`CustomRegistry`](super::CustomRegistry) when a set is loaded.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::board::BoardDefinition;
use super::cards::CardFace;

/// Free-form attributes of a card, a piece type or a board node. Games give them meaning.
pub type Attributes = BTreeMap<String, Value>;

/// One component definition, tagged by `kind`.
///
/// ```json
/// {"kind": "dice", "faces": [{"value": 1, "weight": 1}, {"value": 2, "weight": 1}]}
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum ComponentDefinition {
    Deck(DeckDefinition),
    Dice(DiceDefinition),
    Wheel(WheelDefinition),
    Board(BoardDefinition),
    Pieces(PiecesDefinition),
    Custom(CustomDefinition),
}

/// A deck: its cards, each a definition that copies of the deck instantiate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeckDefinition {
    pub cards: Vec<CardDefinition>,
}

/// One card. Its rank does not decide its value: each game orders and scores cards itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CardDefinition {
    /// Unique within the deck; see [`is_valid_id`] for the allowed characters.
    pub id: String,
    pub suit: String,
    pub rank: u8,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: Attributes,
}

impl CardDefinition {
    /// The face a view shows when the recipient may see this card.
    pub fn face(&self) -> CardFace {
        CardFace { suit: self.suit.clone(), rank: self.rank }
    }
}

/// A die: faces with integer values and positive integer weights (a fair die has all 1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DiceDefinition {
    pub faces: Vec<DieFace>,
}

impl DiceDefinition {
    /// A fair die with faces `1..=sides`.
    pub fn fair(sides: u32) -> Self {
        Self { faces: (1..=i64::from(sides)).map(|value| DieFace { value, weight: 1 }).collect() }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DieFace {
    pub value: i64,
    /// A positive integer; the face comes up with probability weight / total, exactly.
    #[serde(default = "one")]
    pub weight: u64,
}

/// A wheel: sectors with ids, free values and positive integer weights.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WheelDefinition {
    pub sectors: Vec<WheelSector>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WheelSector {
    pub id: String,
    #[serde(default)]
    pub value: Value,
    #[serde(default = "one")]
    pub weight: u64,
}

/// Pieces: types, how many of each one copy holds, and attributes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PiecesDefinition {
    pub types: Vec<PieceType>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PieceType {
    pub id: String,
    /// Units of this type in one copy; positive.
    pub quantity: u32,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: Attributes,
}

/// A kind only trusted code understands: `data` is checked by the validator registered for
/// `typeId` in the [`CustomRegistry`](super::CustomRegistry). Unregistered kinds do not load.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CustomDefinition {
    pub type_id: String,
    #[serde(default)]
    pub data: Value,
}

fn one() -> u64 {
    1
}

/// Why a definition is invalid. Messages say what to fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    #[error("{what} is empty: declare at least one")]
    Empty { what: &'static str },
    #[error("{what} id {id:?} is declared twice: ids must be unique")]
    DuplicateId { what: &'static str, id: String },
    #[error("{what} id {id:?} is invalid: use 1-64 characters from A-Z a-z 0-9 - _ . :")]
    InvalidId { what: &'static str, id: String },
    #[error("{what} #{index} has weight 0: weights must be positive integers")]
    ZeroWeight { what: &'static str, index: usize },
    #[error("the weights of the {what}s overflow u64: use smaller weights")]
    WeightOverflow { what: &'static str },
    #[error("piece type {id:?} has quantity 0: quantities must be positive")]
    ZeroQuantity { id: String },
    #[error("the grid has {rows} rows and {columns} columns: both must be positive")]
    EmptyGrid { rows: u32, columns: u32 },
    #[error("edge #{index} references unknown node {node:?}: declare the node first")]
    UnknownNode { index: usize, node: String },
    #[error("edge #{index} ({from:?} -> {to:?}) repeats an earlier edge of the same kind")]
    DuplicateEdge { index: usize, from: String, to: String },
    #[error("custom component has an empty typeId")]
    EmptyTypeId,
}

/// Ids that appear inside instance ids and resource slots: 1-64 characters from
/// `A-Z a-z 0-9 - _ . :`. In particular no `/`, which separates the parts of an
/// [`InstanceId`](super::InstanceId), and no whitespace.
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// Checks that `ids` are valid and unique.
pub(crate) fn check_ids<'a>(what: &'static str, ids: impl IntoIterator<Item = &'a str>) -> Result<(), DefinitionError> {
    let mut seen = BTreeSet::new();
    for id in ids {
        if !is_valid_id(id) {
            return Err(DefinitionError::InvalidId { what, id: id.to_owned() });
        }
        if !seen.insert(id) {
            return Err(DefinitionError::DuplicateId { what, id: id.to_owned() });
        }
    }
    Ok(())
}

/// Checks that there is at least one weight, none is zero and their sum fits in u64 (the
/// conditions [`Randomness::weighted`](crate::Randomness::weighted) imposes at draw time).
fn check_weights(what: &'static str, weights: impl IntoIterator<Item = u64>) -> Result<(), DefinitionError> {
    let mut total = 0u64;
    let mut count = 0usize;
    for (index, w) in weights.into_iter().enumerate() {
        if w == 0 {
            return Err(DefinitionError::ZeroWeight { what, index });
        }
        total = total.checked_add(w).ok_or(DefinitionError::WeightOverflow { what })?;
        count += 1;
    }
    if count == 0 {
        return Err(DefinitionError::Empty { what });
    }
    Ok(())
}

impl DeckDefinition {
    pub fn validate(&self) -> Result<(), DefinitionError> {
        if self.cards.is_empty() {
            return Err(DefinitionError::Empty { what: "deck" });
        }
        check_ids("card", self.cards.iter().map(|c| c.id.as_str()))
    }

    /// The card definition with this id.
    pub fn card(&self, id: &str) -> Option<&CardDefinition> {
        self.cards.iter().find(|c| c.id == id)
    }
}

impl DiceDefinition {
    pub fn validate(&self) -> Result<(), DefinitionError> {
        check_weights("die face", self.faces.iter().map(|f| f.weight))
    }

    pub fn weights(&self) -> Vec<u64> {
        self.faces.iter().map(|f| f.weight).collect()
    }
}

impl WheelDefinition {
    pub fn validate(&self) -> Result<(), DefinitionError> {
        check_weights("wheel sector", self.sectors.iter().map(|s| s.weight))?;
        check_ids("wheel sector", self.sectors.iter().map(|s| s.id.as_str()))
    }

    pub fn weights(&self) -> Vec<u64> {
        self.sectors.iter().map(|s| s.weight).collect()
    }
}

impl PiecesDefinition {
    pub fn validate(&self) -> Result<(), DefinitionError> {
        if self.types.is_empty() {
            return Err(DefinitionError::Empty { what: "piece types" });
        }
        check_ids("piece type", self.types.iter().map(|t| t.id.as_str()))?;
        match self.types.iter().find(|t| t.quantity == 0) {
            Some(t) => Err(DefinitionError::ZeroQuantity { id: t.id.clone() }),
            None => Ok(()),
        }
    }

    /// The piece type with this id.
    pub fn piece_type(&self, id: &str) -> Option<&PieceType> {
        self.types.iter().find(|t| t.id == id)
    }
}

impl CustomDefinition {
    /// The structural check only; the registered validator runs when a set is loaded.
    pub fn validate(&self) -> Result<(), DefinitionError> {
        if self.type_id.is_empty() {
            return Err(DefinitionError::EmptyTypeId);
        }
        Ok(())
    }
}

impl ComponentDefinition {
    /// The kind as written in JSON (`deck`, `dice`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Deck(_) => "deck",
            Self::Dice(_) => "dice",
            Self::Wheel(_) => "wheel",
            Self::Board(_) => "board",
            Self::Pieces(_) => "pieces",
            Self::Custom(_) => "custom",
        }
    }

    /// Checks the definition without trusted code. Custom kinds also need the registry.
    pub fn validate(&self) -> Result<(), DefinitionError> {
        match self {
            Self::Deck(d) => d.validate(),
            Self::Dice(d) => d.validate(),
            Self::Wheel(w) => w.validate(),
            Self::Board(b) => b.validate(),
            Self::Pieces(p) => p.validate(),
            Self::Custom(c) => c.validate(),
        }
    }

    /// The definition ids one copy instantiates, in declaration order, with how many units
    /// of each (1 per card, `quantity` per piece type). Dice, wheels, boards and custom
    /// components have no instances in zones.
    pub(crate) fn instance_units(&self) -> Vec<(&str, u32)> {
        match self {
            Self::Deck(d) => d.cards.iter().map(|c| (c.id.as_str(), 1)).collect(),
            Self::Pieces(p) => p.types.iter().map(|t| (t.id.as_str(), t.quantity)).collect(),
            Self::Dice(_) | Self::Wheel(_) | Self::Board(_) | Self::Custom(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(v: Value) -> ComponentDefinition {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn json_shape_is_tagged_by_kind_and_strict() {
        let dice = parse(json!({"kind": "dice", "faces": [{"value": 1}, {"value": 2, "weight": 3}]}));
        assert_eq!(
            dice,
            ComponentDefinition::Dice(DiceDefinition {
                faces: vec![DieFace { value: 1, weight: 1 }, DieFace { value: 2, weight: 3 }]
            })
        );
        let custom = parse(json!({"kind": "custom", "typeId": "hundido/fleet", "data": {"ships": [5, 4]}}));
        assert_eq!(custom.kind(), "custom");
        let back: ComponentDefinition = serde_json::from_value(serde_json::to_value(&custom).unwrap()).unwrap();
        assert_eq!(back, custom);

        for bad in [
            json!({"kind": "dice", "faces": [], "extra": 1}),
            json!({"kind": "dice", "faces": [{"value": 1, "colour": "red"}]}),
            json!({"kind": "deck", "cards": [{"id": "a", "suit": "x", "rank": 1, "points": 3}]}),
            json!({"kind": "spinner", "sectors": []}),
            json!({"faces": []}),
        ] {
            assert!(serde_json::from_value::<ComponentDefinition>(bad.clone()).is_err(), "accepted {bad}");
        }
    }

    #[test]
    fn validation_reports_each_defect() {
        let cases = [
            (json!({"kind": "deck", "cards": []}), DefinitionError::Empty { what: "deck" }),
            (
                json!({"kind": "deck", "cards": [
                    {"id": "a", "suit": "s", "rank": 1}, {"id": "a", "suit": "s", "rank": 2}]}),
                DefinitionError::DuplicateId { what: "card", id: "a".into() },
            ),
            (
                json!({"kind": "deck", "cards": [{"id": "a/b", "suit": "s", "rank": 1}]}),
                DefinitionError::InvalidId { what: "card", id: "a/b".into() },
            ),
            (json!({"kind": "dice", "faces": []}), DefinitionError::Empty { what: "die face" }),
            (
                json!({"kind": "dice", "faces": [{"value": 1}, {"value": 2, "weight": 0}]}),
                DefinitionError::ZeroWeight { what: "die face", index: 1 },
            ),
            (
                json!({"kind": "dice", "faces": [{"value": 1, "weight": u64::MAX}, {"value": 2}]}),
                DefinitionError::WeightOverflow { what: "die face" },
            ),
            (json!({"kind": "wheel", "sectors": []}), DefinitionError::Empty { what: "wheel sector" }),
            (
                json!({"kind": "wheel", "sectors": [{"id": "x"}, {"id": "x"}]}),
                DefinitionError::DuplicateId { what: "wheel sector", id: "x".into() },
            ),
            (json!({"kind": "pieces", "types": []}), DefinitionError::Empty { what: "piece types" }),
            (
                json!({"kind": "pieces", "types": [{"id": "pawn", "quantity": 0}]}),
                DefinitionError::ZeroQuantity { id: "pawn".into() },
            ),
            (json!({"kind": "custom", "typeId": ""}), DefinitionError::EmptyTypeId),
            (
                json!({"kind": "board", "layout": {"shape": "grid", "rows": 0, "columns": 7}}),
                DefinitionError::EmptyGrid { rows: 0, columns: 7 },
            ),
            (
                json!({"kind": "board", "layout": {"shape": "graph", "nodes": [], "edges": []}}),
                DefinitionError::Empty { what: "board nodes" },
            ),
            (
                json!({"kind": "board", "layout": {"shape": "graph", "nodes": [{"id": "1"}, {"id": "1"}], "edges": []}}),
                DefinitionError::DuplicateId { what: "board node", id: "1".into() },
            ),
            (
                json!({"kind": "board", "layout": {"shape": "graph", "nodes": [{"id": "1"}],
                    "edges": [{"from": "1", "to": "2"}]}}),
                DefinitionError::UnknownNode { index: 0, node: "2".into() },
            ),
            (
                json!({"kind": "board", "layout": {"shape": "graph", "nodes": [{"id": "1"}, {"id": "2"}],
                    "edges": [{"from": "1", "to": "2"}, {"from": "1", "to": "2"}]}}),
                DefinitionError::DuplicateEdge { index: 1, from: "1".into(), to: "2".into() },
            ),
        ];
        for (json, expected) in cases {
            assert_eq!(parse(json.clone()).validate(), Err(expected), "{json}");
        }
    }

    #[test]
    fn valid_definitions_pass() {
        for json in [
            json!({"kind": "deck", "cards": [{"id": "AS", "suit": "spades", "rank": 1, "attributes": {"x": 1}}]}),
            json!({"kind": "dice", "faces": [{"value": 1}]}),
            json!({"kind": "wheel", "sectors": [{"id": "red", "value": 10, "weight": 2}]}),
            json!({"kind": "pieces", "types": [{"id": "pawn", "quantity": 8}]}),
            json!({"kind": "custom", "typeId": "x"}),
            json!({"kind": "board", "layout": {"shape": "grid", "rows": 6, "columns": 7}}),
            json!({"kind": "board", "layout": {"shape": "graph", "nodes": [{"id": "1"}, {"id": "2"}],
                "edges": [{"from": "1", "to": "2"}, {"from": "1", "to": "2", "kind": "ladder"}]}}),
        ] {
            assert_eq!(parse(json.clone()).validate(), Ok(()), "{json}");
        }
        assert_eq!(DiceDefinition::fair(6).validate(), Ok(()));
        assert_eq!(DiceDefinition::fair(0).validate(), Err(DefinitionError::Empty { what: "die face" }));
    }
}
