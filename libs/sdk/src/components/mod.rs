//! The component library: definitions, loading, instances, zones and draws.
//!
//! Which piece to use:
//! - a package's declared components are [`ComponentDeclaration`]s; load them with
//!   [`ComponentSet::load`] and a [`CustomRegistry`] holding the validators of any custom
//!   kinds (an unregistered kind is [`ComponentError::UnknownCustomKind`]);
//! - the loaded set gives the definitions (immutable) and the [`Instance`]s, one per card
//!   and per piece unit, with deterministic INTERNAL [`InstanceId`]s (see [`instances`]);
//! - [`Zones::setup`] puts every instance in [`SUPPLY`]; rules add zones with
//!   [`Zones::with_zone`] and move cards with [`Zones::move_cards`], [`Zones::move_top`] and
//!   [`Zones::move_all`], each returning new zones or an error and never a partial state;
//!   [`check_conservation`] proves each instance is in exactly one zone;
//! - [`Zones::shuffle_zone`], [`roll`] and [`spin`] draw through labelled
//!   [`Randomness`](crate::Randomness), so they are traced and replay;
//! - boards are grids or DIRECTED graphs ([`GraphLayout::successors`], [`GraphLayout::walk`]);
//! - views show a visible card as a [`CardFace`]; a hidden card shows no face and no id.
//!
//! Card values are not ranks: each game orders and scores cards in its own rules.

mod board;
mod cards;
mod definition;
mod draws;
pub mod instances;
mod load;
mod zones;

pub use board::{BoardDefinition, BoardEdge, BoardError, BoardLayout, GraphLayout, GraphNode, GridLayout};
pub use cards::{
    CardFace, POKER_SUITS, SPANISH_RANKS, SPANISH_SUITS, poker_card_id, poker52, spanish_card_id, spanish40,
};
pub use definition::{
    Attributes, CardDefinition, ComponentDefinition, CustomDefinition, DeckDefinition, DefinitionError, DiceDefinition,
    DieFace, PieceType, PiecesDefinition, WheelDefinition, WheelSector, is_valid_id,
};
pub use draws::{roll, spin};
pub use instances::{Instance, InstanceId};
pub use load::{ComponentDeclaration, ComponentError, ComponentSet, CustomRegistry, CustomValidator, MAX_INSTANCES};
pub use zones::{ConservationError, SUPPLY, Visibility, Zone, ZoneError, Zones, check_conservation};
