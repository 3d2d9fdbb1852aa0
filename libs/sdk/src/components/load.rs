//! Loading declared components into a validated [`ComponentSet`].

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::board::BoardDefinition;
use super::cards::CardFace;
use super::definition::{
    CardDefinition, ComponentDefinition, CustomDefinition, DeckDefinition, DefinitionError, DiceDefinition, PieceType,
    PiecesDefinition, WheelDefinition, is_valid_id,
};
use super::instances::{Instance, InstanceId};

/// The most instances one set may hold; a larger declaration is a load error, not an
/// allocation the engine attempts.
pub const MAX_INSTANCES: usize = 65_536;

/// Checks the `data` of one custom kind. Registered by trusted code (the rules module);
/// the error string says what is wrong with the data.
pub type CustomValidator = fn(&Value) -> Result<(), String>;

/// The custom kinds trusted code understands, by `typeId`.
#[derive(Clone, Debug, Default)]
pub struct CustomRegistry {
    validators: BTreeMap<String, CustomValidator>,
}

impl CustomRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the validator for `type_id`. Registering a kind twice is an error, so two
    /// modules cannot silently disagree about one kind.
    pub fn register(&mut self, type_id: &str, validator: CustomValidator) -> Result<(), ComponentError> {
        if type_id.is_empty() {
            return Err(ComponentError::Definition {
                component_id: String::new(),
                error: DefinitionError::EmptyTypeId,
            });
        }
        if self.validators.contains_key(type_id) {
            return Err(ComponentError::DuplicateCustomKind(type_id.to_owned()));
        }
        self.validators.insert(type_id.to_owned(), validator);
        Ok(())
    }

    pub fn is_registered(&self, type_id: &str) -> bool {
        self.validators.contains_key(type_id)
    }

    /// Runs the registered validator; an unregistered kind is [`ComponentError::UnknownCustomKind`].
    pub fn check(&self, component_id: &str, custom: &CustomDefinition) -> Result<(), ComponentError> {
        let validator = self.validators.get(&custom.type_id).ok_or_else(|| ComponentError::UnknownCustomKind {
            component_id: component_id.to_owned(),
            type_id: custom.type_id.clone(),
        })?;
        validator(&custom.data).map_err(|reason| ComponentError::CustomRejected {
            component_id: component_id.to_owned(),
            type_id: custom.type_id.clone(),
            reason,
        })
    }
}

/// A component as a game declares it: an id local to the game, a definition and how many
/// copies (two decks = one declaration with `copies: 2`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComponentDeclaration {
    pub component_id: String,
    pub definition: ComponentDefinition,
    #[serde(default = "one")]
    pub copies: u32,
}

fn one() -> u32 {
    1
}

/// Why a set of components does not load. Messages say what to fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ComponentError {
    #[error("component id {0:?} is invalid: use 1-64 characters from A-Z a-z 0-9 - _ . :")]
    InvalidComponentId(String),
    #[error("component {0:?} is declared twice: component ids must be unique")]
    DuplicateComponent(String),
    #[error("component {0:?} declares 0 copies: declare at least one")]
    ZeroCopies(String),
    #[error("component {component_id:?} has an invalid definition: {error}")]
    Definition {
        component_id: String,
        #[source]
        error: DefinitionError,
    },
    #[error(
        "component {component_id:?} has custom kind {type_id:?}, which no trusted code registered: register a validator for it or remove the component"
    )]
    UnknownCustomKind { component_id: String, type_id: String },
    #[error("component {component_id:?} of custom kind {type_id:?} was rejected by its validator: {reason}")]
    CustomRejected { component_id: String, type_id: String, reason: String },
    #[error("custom kind {0:?} is registered twice: register each kind once")]
    DuplicateCustomKind(String),
    #[error("the components declare more than {limit} instances: declare fewer copies or quantities")]
    TooManyInstances { limit: usize },
}

/// A validated set of components and their instances, immutable once loaded.
///
/// Built only by [`ComponentSet::load`] (it has no `Deserialize`: a stored set is re-loaded
/// from its declarations, so validation cannot be bypassed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComponentSet {
    components: Vec<ComponentDeclaration>,
    index: BTreeMap<String, usize>,
    instances: Vec<Instance>,
    by_instance: BTreeMap<InstanceId, usize>,
}

impl ComponentSet {
    /// Validates every declaration (custom kinds through `registry`) and creates the
    /// instances, ordered by declaration, then copy, then definition order, then unit.
    pub fn load(declarations: Vec<ComponentDeclaration>, registry: &CustomRegistry) -> Result<Self, ComponentError> {
        let mut index = BTreeMap::new();
        let mut total = 0usize;
        for (i, decl) in declarations.iter().enumerate() {
            let id = &decl.component_id;
            if !is_valid_id(id) {
                return Err(ComponentError::InvalidComponentId(id.clone()));
            }
            if index.insert(id.clone(), i).is_some() {
                return Err(ComponentError::DuplicateComponent(id.clone()));
            }
            if decl.copies == 0 {
                return Err(ComponentError::ZeroCopies(id.clone()));
            }
            decl.definition
                .validate()
                .map_err(|error| ComponentError::Definition { component_id: id.clone(), error })?;
            if let ComponentDefinition::Custom(custom) = &decl.definition {
                registry.check(id, custom)?;
            }
            let per_copy = decl
                .definition
                .instance_units()
                .iter()
                .try_fold(0usize, |acc, (_, units)| acc.checked_add(*units as usize));
            total = per_copy
                .and_then(|n| n.checked_mul(decl.copies as usize))
                .and_then(|n| n.checked_add(total))
                .filter(|n| *n <= MAX_INSTANCES)
                .ok_or(ComponentError::TooManyInstances { limit: MAX_INSTANCES })?;
        }

        let mut instances = Vec::with_capacity(total);
        for decl in &declarations {
            let is_deck = matches!(decl.definition, ComponentDefinition::Deck(_));
            for copy in 0..decl.copies {
                for (definition_id, units) in decl.definition.instance_units() {
                    for unit in 0..units {
                        let id = if is_deck {
                            InstanceId::card(&decl.component_id, copy, definition_id)
                        } else {
                            InstanceId::piece(&decl.component_id, copy, definition_id, unit)
                        };
                        instances.push(Instance {
                            id,
                            component_id: decl.component_id.clone(),
                            definition_id: definition_id.to_owned(),
                            copy,
                            unit,
                        });
                    }
                }
            }
        }
        let by_instance = instances.iter().enumerate().map(|(i, inst)| (inst.id.clone(), i)).collect();
        Ok(Self { components: declarations, index, instances, by_instance })
    }

    /// The declarations, in declaration order.
    pub fn components(&self) -> &[ComponentDeclaration] {
        &self.components
    }

    pub fn get(&self, component_id: &str) -> Option<&ComponentDeclaration> {
        self.index.get(component_id).map(|i| &self.components[*i])
    }

    pub fn definition(&self, component_id: &str) -> Option<&ComponentDefinition> {
        self.get(component_id).map(|d| &d.definition)
    }

    pub fn deck(&self, component_id: &str) -> Option<&DeckDefinition> {
        match self.definition(component_id)? {
            ComponentDefinition::Deck(d) => Some(d),
            _ => None,
        }
    }

    pub fn dice(&self, component_id: &str) -> Option<&DiceDefinition> {
        match self.definition(component_id)? {
            ComponentDefinition::Dice(d) => Some(d),
            _ => None,
        }
    }

    pub fn wheel(&self, component_id: &str) -> Option<&WheelDefinition> {
        match self.definition(component_id)? {
            ComponentDefinition::Wheel(w) => Some(w),
            _ => None,
        }
    }

    pub fn board(&self, component_id: &str) -> Option<&BoardDefinition> {
        match self.definition(component_id)? {
            ComponentDefinition::Board(b) => Some(b),
            _ => None,
        }
    }

    pub fn pieces(&self, component_id: &str) -> Option<&PiecesDefinition> {
        match self.definition(component_id)? {
            ComponentDefinition::Pieces(p) => Some(p),
            _ => None,
        }
    }

    pub fn custom(&self, component_id: &str) -> Option<&CustomDefinition> {
        match self.definition(component_id)? {
            ComponentDefinition::Custom(c) => Some(c),
            _ => None,
        }
    }

    /// Every instance, in the deterministic order [`ComponentSet::load`] describes.
    pub fn instances(&self) -> &[Instance] {
        &self.instances
    }

    pub fn instance(&self, id: &InstanceId) -> Option<&Instance> {
        self.by_instance.get(id).map(|i| &self.instances[*i])
    }

    /// The card definition of a card instance.
    pub fn card(&self, id: &InstanceId) -> Option<&CardDefinition> {
        let inst = self.instance(id)?;
        self.deck(&inst.component_id)?.card(&inst.definition_id)
    }

    /// The face of a card instance, for views of recipients who may see it.
    pub fn face(&self, id: &InstanceId) -> Option<CardFace> {
        self.card(id).map(CardDefinition::face)
    }

    /// The piece type of a piece instance.
    pub fn piece_type(&self, id: &InstanceId) -> Option<&PieceType> {
        let inst = self.instance(id)?;
        self.pieces(&inst.component_id)?.piece_type(&inst.definition_id)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::json;

    use super::*;
    use crate::components::poker52;

    fn decl(component_id: &str, definition: ComponentDefinition, copies: u32) -> ComponentDeclaration {
        ComponentDeclaration { component_id: component_id.into(), definition, copies }
    }

    fn fleet(data: &Value) -> Result<(), String> {
        match data.get("ships").and_then(Value::as_array) {
            Some(ships) if !ships.is_empty() => Ok(()),
            _ => Err("ships must be a non-empty array".into()),
        }
    }

    fn custom(data: Value) -> ComponentDefinition {
        ComponentDefinition::Custom(CustomDefinition { type_id: "hundido/fleet".into(), data })
    }

    #[test]
    fn two_poker_decks_give_104_instances_of_52_definitions() {
        let set =
            ComponentSet::load(vec![decl("mainDeck", ComponentDefinition::Deck(poker52()), 2)], &CustomRegistry::new())
                .unwrap();
        let instances = set.instances();
        assert_eq!(instances.len(), 104);
        let ids: BTreeSet<&InstanceId> = instances.iter().map(|i| &i.id).collect();
        assert_eq!(ids.len(), 104);
        let definitions: BTreeSet<&str> = instances.iter().map(|i| i.definition_id.as_str()).collect();
        assert_eq!(definitions.len(), 52);
        assert_eq!(instances[0].id.as_str(), "mainDeck/0/AC");
        assert_eq!(instances[52].id.as_str(), "mainDeck/1/AC");
        assert_eq!(instances[103].id.as_str(), "mainDeck/1/KS");
        assert_eq!(instances[53].copy, 1);
        let ace = InstanceId::card("mainDeck", 1, "AS");
        assert_eq!(set.face(&ace), Some(CardFace { suit: "spades".into(), rank: 1 }));
        assert_eq!(set.instance(&ace).unwrap().component_id, "mainDeck");
        assert_eq!(set.face(&InstanceId::card("mainDeck", 2, "AS")), None);
        // Loading again gives the same ids in the same order.
        let again =
            ComponentSet::load(vec![decl("mainDeck", ComponentDefinition::Deck(poker52()), 2)], &CustomRegistry::new())
                .unwrap();
        assert_eq!(again, set);
    }

    #[test]
    fn pieces_get_one_instance_per_unit_and_dice_none() {
        let pieces: ComponentDefinition = serde_json::from_value(
            json!({"kind": "pieces", "types": [{"id": "red", "quantity": 2}, {"id": "blue", "quantity": 1}]}),
        )
        .unwrap();
        let set = ComponentSet::load(
            vec![decl("die", ComponentDefinition::Dice(DiceDefinition::fair(6)), 2), decl("pawns", pieces, 2)],
            &CustomRegistry::new(),
        )
        .unwrap();
        let ids: Vec<&str> = set.instances().iter().map(|i| i.id.as_str()).collect();
        assert_eq!(
            ids,
            ["pawns/0/red/0", "pawns/0/red/1", "pawns/0/blue/0", "pawns/1/red/0", "pawns/1/red/1", "pawns/1/blue/0"]
        );
        assert_eq!(set.piece_type(&InstanceId::piece("pawns", 1, "red", 1)).unwrap().quantity, 2);
        assert!(set.dice("die").is_some());
        assert!(set.deck("die").is_none());
    }

    #[test]
    fn unknown_custom_kind_fails_to_load_and_registered_one_loads() {
        let declared = vec![decl("fleet", custom(json!({"ships": [5, 4, 3]})), 1)];
        assert_eq!(
            ComponentSet::load(declared.clone(), &CustomRegistry::new()),
            Err(ComponentError::UnknownCustomKind { component_id: "fleet".into(), type_id: "hundido/fleet".into() })
        );
        let mut registry = CustomRegistry::new();
        registry.register("hundido/fleet", fleet).unwrap();
        assert!(registry.is_registered("hundido/fleet"));
        assert_eq!(
            registry.register("hundido/fleet", fleet),
            Err(ComponentError::DuplicateCustomKind("hundido/fleet".into()))
        );
        let set = ComponentSet::load(declared, &registry).unwrap();
        assert_eq!(set.custom("fleet").unwrap().data, json!({"ships": [5, 4, 3]}));
        assert!(set.instances().is_empty());

        assert_eq!(
            ComponentSet::load(vec![decl("fleet", custom(json!({"ships": []})), 1)], &registry),
            Err(ComponentError::CustomRejected {
                component_id: "fleet".into(),
                type_id: "hundido/fleet".into(),
                reason: "ships must be a non-empty array".into(),
            })
        );
    }

    #[test]
    fn declaration_errors() {
        let reg = CustomRegistry::new();
        let deck = || ComponentDefinition::Deck(poker52());
        assert_eq!(
            ComponentSet::load(vec![decl("a", deck(), 1), decl("a", deck(), 1)], &reg),
            Err(ComponentError::DuplicateComponent("a".into()))
        );
        assert_eq!(
            ComponentSet::load(vec![decl("a/b", deck(), 1)], &reg),
            Err(ComponentError::InvalidComponentId("a/b".into()))
        );
        assert_eq!(ComponentSet::load(vec![decl("a", deck(), 0)], &reg), Err(ComponentError::ZeroCopies("a".into())));
        assert_eq!(
            ComponentSet::load(vec![decl("a", ComponentDefinition::Deck(DeckDefinition { cards: vec![] }), 1)], &reg),
            Err(ComponentError::Definition {
                component_id: "a".into(),
                error: DefinitionError::Empty { what: "deck" }
            })
        );
        let huge = ComponentDefinition::Pieces(PiecesDefinition {
            types: vec![PieceType { id: "grain".into(), quantity: u32::MAX, attributes: Default::default() }],
        });
        assert_eq!(
            ComponentSet::load(vec![decl("sand", huge, 2)], &reg),
            Err(ComponentError::TooManyInstances { limit: MAX_INSTANCES })
        );
        assert_eq!(ComponentSet::load(vec![decl("a", deck(), 1)], &reg).unwrap().instances().len(), 52);
    }

    #[test]
    fn schemas_generate_for_declarations_and_zones() {
        let schema = serde_json::to_value(schemars::schema_for!(ComponentDeclaration)).unwrap();
        let text = schema.to_string();
        for kind in ["deck", "dice", "wheel", "board", "pieces", "custom"] {
            assert!(text.contains(&format!("\"{kind}\"")), "kind {kind} missing from the schema");
        }
        assert!(text.contains("\"componentId\"") && text.contains("\"typeId\""));
        let zones = serde_json::to_value(schemars::schema_for!(crate::components::Zones)).unwrap().to_string();
        assert!(zones.contains("\"visibility\"") && zones.contains("\"hidden\""));
    }

    #[test]
    fn declaration_json_defaults_copies_to_one() {
        let d: ComponentDeclaration = serde_json::from_value(
            json!({"componentId": "die", "definition": {"kind": "dice", "faces": [{"value": 1}]}}),
        )
        .unwrap();
        assert_eq!(d.copies, 1);
        assert!(
            serde_json::from_value::<ComponentDeclaration>(
                json!({"componentId": "die", "definition": {"kind": "dice", "faces": [{"value": 1}]}, "count": 2})
            )
            .is_err()
        );
    }
}
