//! Instances: the physical cards and pieces of one match.
//!
//! # Instance ids
//!
//! Each copy of a deck or piece set instantiates its definitions in declaration order. The
//! id is a deterministic function of where the instance comes from, so the same declared
//! components always give the same ids, in every match and every replay:
//!
//! - a card: `{componentId}/{copy}/{cardId}`, e.g. `mainDeck/0/AS`, `mainDeck/1/AS`;
//! - a piece: `{componentId}/{copy}/{pieceTypeId}/{unit}`, e.g. `pawns/0/red/3`, with
//!   `unit` in `0..quantity`.
//!
//! `copy` counts from 0. Component and definition ids never contain `/` (see
//! [`is_valid_id`](super::is_valid_id)), so the parts can be read back unambiguously.
//!
//! # Ids are internal
//!
//! An instance id names a physical card for the rules, the engine and the audit trail. It
//! must NEVER reach a recipient who may not see that card: the id is stable across shuffles
//! and moves (and embeds the card's definition), so revealing it lets a rival track the card.
//! A projection shows a hidden card as a count or as an opaque token that changes at every
//! revision; only cards the recipient may see carry their [`CardFace`](super::CardFace).

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The stable, deterministic, INTERNAL id of one card or piece in a match. See the module
/// docs for the format and why it never reaches a recipient who may not see the card.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct InstanceId(String);

impl InstanceId {
    /// The id of copy `copy` of card `card_id` in component `component_id`.
    pub fn card(component_id: &str, copy: u32, card_id: &str) -> Self {
        Self(format!("{component_id}/{copy}/{card_id}"))
    }

    /// The id of unit `unit` of piece type `type_id`, copy `copy` of component `component_id`.
    pub fn piece(component_id: &str, copy: u32, type_id: &str, unit: u32) -> Self {
        Self(format!("{component_id}/{copy}/{type_id}/{unit}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One card or piece: its id and where it comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Instance {
    pub id: InstanceId,
    pub component_id: String,
    /// The card id or piece type id within the component's definition.
    pub definition_id: String,
    /// Which copy of the component, from 0.
    pub copy: u32,
    /// Which unit of a piece type, from 0; always 0 for cards.
    #[serde(default)]
    pub unit: u32,
}
