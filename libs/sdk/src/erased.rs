//! The erased, JSON-level form of a game, so one registry holds many games and many
//! versions of one game. [`erase`] wraps any typed [`Game`].
//!
//! A position is decoded once into an opaque [`LoadedPosition`] (the typed value behind
//! `dyn Any`); every other call takes that handle, so a command costs one decode at
//! activation and one encode per accepted change, not one per call.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::game::{Corrupt, DeadlineOp, Descriptor, Game, Lifecycle, Offer, Pos, Recipient, RuleError, Setup, Trans};
use crate::position::{Flow, JsonPosition, MatchResult, Participant, Position, RawJson, Seat};
use crate::random::{EntropySource, Services};

/// The JSON Schemas (2020-12) of a game's types, generated from its Rust types.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Schemas {
    pub config: Value,
    pub data: Value,
    pub event: Value,
    pub view: Value,
    pub context: Value,
    pub visible_event: Value,
}

/// A decoded position of some game (opaque to the engine).
pub struct LoadedPosition(Box<dyn Any + Send + Sync>);

/// Decoded internal events of some game (opaque to the engine).
pub struct LoadedEvents(Box<dyn Any + Send + Sync>);

/// A decoded action of some game.
pub struct LoadedAction(Box<dyn Any + Send + Sync>);

/// A transition of some game, with the parts the engine reads directly.
pub struct ErasedTransition {
    pub next: LoadedPosition,
    pub flow: Flow,
    pub result: Option<MatchResult>,
    pub events: LoadedEvents,
    pub deadlines: Vec<DeadlineOp>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ErasedOffer {
    pub action_type: String,
    /// The complete payload of a concrete offer, as the text it was serialized into.
    pub payload: Option<RawJson>,
    /// The visible constraints of a parametrized offer.
    pub constraints: Option<Value>,
}

/// A recipient's projection, its view and context serialized once from the typed values
/// (the engine checks the texts against their schemas and sends them as they are).
#[derive(Clone, Debug, PartialEq)]
pub struct ErasedProjection {
    pub view: RawJson,
    pub context: RawJson,
    pub result: Option<MatchResult>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VisibleEvent {
    pub event_type: String,
    /// The event's data, as the text it was serialized into.
    pub data: RawJson,
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("decode {what}: {source}")]
    Json { what: &'static str, source: serde_json::Error },
    #[error("position belongs to another game")]
    WrongGame,
    #[error("an action or visible event is not serialized as {{\"type\", \"{0}\"}}")]
    NotTagged(&'static str),
}

/// A game as the engine sees it.
pub trait ErasedGame: Send + Sync {
    fn descriptor(&self) -> &Descriptor;
    /// [`Game::spectators`]: whether the game defines a spectator projection.
    fn spectators(&self) -> bool;
    /// [`Game::handover`]: the game's default hand-over policy.
    fn handover(&self) -> crate::Handover;
    fn schemas(&self) -> &Schemas;

    fn decode_position(&self, position: &JsonPosition) -> Result<LoadedPosition, DecodeError>;
    fn encode_position(&self, position: &LoadedPosition) -> Result<JsonPosition, DecodeError>;
    fn encode_events(&self, events: &LoadedEvents) -> Result<Vec<Value>, DecodeError>;
    fn decode_events(&self, events: &[Value]) -> Result<LoadedEvents, DecodeError>;
    fn decode_action(&self, action_type: &str, payload: &Value) -> Result<LoadedAction, DecodeError>;
    fn decode_config(&self, config: &Value) -> Result<Value, DecodeError>;

    fn setup(
        &self,
        config: &Value,
        participants: &BTreeMap<Seat, Participant>,
        services: &mut Services<'_>,
    ) -> Result<ErasedTransition, RuleError>;
    fn validate_position(&self, position: &LoadedPosition) -> Result<(), Corrupt>;
    fn apply(
        &self,
        position: &LoadedPosition,
        actor: &str,
        action: &LoadedAction,
        services: &mut Services<'_>,
    ) -> Result<ErasedTransition, RuleError>;
    fn on_lifecycle(
        &self,
        position: &LoadedPosition,
        event: &Lifecycle,
        services: &mut Services<'_>,
    ) -> Result<ErasedTransition, RuleError>;
    fn available_actions(
        &self,
        position: &LoadedPosition,
        recipient: Recipient<'_>,
    ) -> Result<Vec<ErasedOffer>, DecodeError>;
    fn project(&self, position: &LoadedPosition, recipient: Recipient<'_>) -> Result<ErasedProjection, DecodeError>;
    fn project_events(
        &self,
        before: &LoadedPosition,
        after: &LoadedPosition,
        events: &LoadedEvents,
        recipient: Recipient<'_>,
    ) -> Result<Vec<VisibleEvent>, DecodeError>;
    /// The participants of a decoded position (the engine's part of it).
    fn participants<'a>(&self, position: &'a LoadedPosition) -> &'a BTreeMap<Seat, Participant>;
    /// A copy of `position` with `seat` marked withdrawn.
    fn with_withdrawn(&self, position: &LoadedPosition, seat: &str) -> LoadedPosition;
    /// The engine's cancellation of a match (a platform operation the rules never see): the
    /// same data, a terminal flow, `{kind: "cancelled", reasonCode}` and no events. Pending
    /// deadlines are the engine's to cancel.
    fn cancelled(&self, position: &LoadedPosition, reason_code: &str) -> ErasedTransition;
    fn bot_action(
        &self,
        position: &LoadedPosition,
        seat: &str,
        profile: &str,
        entropy: &mut dyn EntropySource,
    ) -> Option<(String, Value)>;
}

/// Wraps a typed game into the erased interface.
pub fn erase<G: Game>(game: G) -> Arc<dyn ErasedGame> {
    let descriptor = game.descriptor();
    let schemas = Schemas {
        config: schemars::schema_for!(G::Config).to_value(),
        data: schemars::schema_for!(G::Data).to_value(),
        event: schemars::schema_for!(G::Event).to_value(),
        view: schemars::schema_for!(G::View).to_value(),
        context: schemars::schema_for!(G::Context).to_value(),
        visible_event: schemars::schema_for!(G::VisibleEvent).to_value(),
    };
    Arc::new(Module { game, descriptor, schemas })
}

struct Module<G: Game> {
    game: G,
    descriptor: Descriptor,
    schemas: Schemas,
}

impl<G: Game> Module<G> {
    fn pos<'a>(&self, p: &'a LoadedPosition) -> &'a Pos<G> {
        p.0.downcast_ref::<Pos<G>>().expect("a loaded position is only ever passed back to the game that decoded it")
    }

    fn finish(&self, config: G::Config, participants: BTreeMap<Seat, Participant>, t: Trans<G>) -> ErasedTransition {
        let flow = t.flow.clone();
        let result = t.result.clone();
        let next: Pos<G> = Position { config, participants, data: t.data, flow: t.flow, result: t.result };
        ErasedTransition {
            next: LoadedPosition(Box::new(next)),
            flow,
            result,
            events: LoadedEvents(Box::new(t.events)),
            deadlines: t.deadlines,
        }
    }
}

fn json<T: serde::de::DeserializeOwned>(what: &'static str, v: Value) -> Result<T, DecodeError> {
    serde_json::from_value(v).map_err(|source| DecodeError::Json { what, source })
}

fn to_json<T: Serialize>(what: &'static str, v: &T) -> Result<Value, DecodeError> {
    serde_json::to_value(v).map_err(|source| DecodeError::Json { what, source })
}

impl<G: Game> ErasedGame for Module<G> {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn spectators(&self) -> bool {
        self.game.spectators()
    }

    fn handover(&self) -> crate::Handover {
        self.game.handover()
    }

    fn schemas(&self) -> &Schemas {
        &self.schemas
    }

    fn decode_position(&self, p: &JsonPosition) -> Result<LoadedPosition, DecodeError> {
        let typed: Pos<G> = Position {
            config: p.config.decode().map_err(|source| DecodeError::Json { what: "config", source })?,
            participants: p.participants.clone(),
            data: p.data.decode().map_err(|source| DecodeError::Json { what: "data", source })?,
            flow: p.flow.clone(),
            result: p.result.clone(),
        };
        Ok(LoadedPosition(Box::new(typed)))
    }

    fn encode_position(&self, p: &LoadedPosition) -> Result<JsonPosition, DecodeError> {
        let p = p.0.downcast_ref::<Pos<G>>().ok_or(DecodeError::WrongGame)?;
        Ok(Position {
            config: RawJson::encode(&p.config).map_err(|source| DecodeError::Json { what: "config", source })?,
            participants: p.participants.clone(),
            data: RawJson::encode(&p.data).map_err(|source| DecodeError::Json { what: "data", source })?,
            flow: p.flow.clone(),
            result: p.result.clone(),
        })
    }

    fn encode_events(&self, events: &LoadedEvents) -> Result<Vec<Value>, DecodeError> {
        let events = events.0.downcast_ref::<Vec<G::Event>>().ok_or(DecodeError::WrongGame)?;
        events.iter().map(|e| to_json("event", e)).collect()
    }

    fn decode_events(&self, events: &[Value]) -> Result<LoadedEvents, DecodeError> {
        let typed: Vec<G::Event> = events.iter().map(|e| json("event", e.clone())).collect::<Result<_, _>>()?;
        Ok(LoadedEvents(Box::new(typed)))
    }

    fn decode_action(&self, action_type: &str, payload: &Value) -> Result<LoadedAction, DecodeError> {
        let tagged = serde_json::json!({ "type": action_type, "payload": payload });
        let action: G::Action = json("action", tagged)?;
        Ok(LoadedAction(Box::new(action)))
    }

    fn decode_config(&self, config: &Value) -> Result<Value, DecodeError> {
        let typed: G::Config = json("config", config.clone())?;
        to_json("config", &typed)
    }

    fn setup(
        &self,
        config: &Value,
        participants: &BTreeMap<Seat, Participant>,
        services: &mut Services<'_>,
    ) -> Result<ErasedTransition, RuleError> {
        // The engine validated the config against its schema; this decode cannot normally fail.
        let config: G::Config =
            serde_json::from_value(config.clone()).map_err(|_| RuleError::illegal("invalid-config"))?;
        let input = Setup { config, participants: participants.clone() };
        let t = self.game.setup(&input, services)?;
        Ok(self.finish(input.config, input.participants, t))
    }

    fn validate_position(&self, p: &LoadedPosition) -> Result<(), Corrupt> {
        self.game.validate_position(self.pos(p))
    }

    fn apply(
        &self,
        p: &LoadedPosition,
        actor: &str,
        action: &LoadedAction,
        services: &mut Services<'_>,
    ) -> Result<ErasedTransition, RuleError> {
        let pos = self.pos(p);
        let action =
            action.0.downcast_ref::<G::Action>().ok_or_else(|| RuleError::fault("action decoded for another game"))?;
        let t = self.game.apply(pos, actor, action, services)?;
        Ok(self.finish(pos.config.clone(), pos.participants.clone(), t))
    }

    fn on_lifecycle(
        &self,
        p: &LoadedPosition,
        event: &Lifecycle,
        services: &mut Services<'_>,
    ) -> Result<ErasedTransition, RuleError> {
        let pos = self.pos(p);
        let t = self.game.on_lifecycle(pos, event, services)?;
        Ok(self.finish(pos.config.clone(), pos.participants.clone(), t))
    }

    fn available_actions(&self, p: &LoadedPosition, recipient: Recipient<'_>) -> Result<Vec<ErasedOffer>, DecodeError> {
        self.game
            .available_actions(self.pos(p), recipient)
            .into_iter()
            .map(|offer| match offer {
                Offer::Concrete(action) => {
                    let (action_type, payload) = split_tagged_raw("offer", &action, "payload")?;
                    Ok(ErasedOffer { action_type, payload: Some(payload), constraints: None })
                }
                Offer::Parametrized { action_type, constraints } => {
                    Ok(ErasedOffer { action_type, payload: None, constraints: Some(constraints) })
                }
            })
            .collect()
    }

    fn project(&self, p: &LoadedPosition, recipient: Recipient<'_>) -> Result<ErasedProjection, DecodeError> {
        let pr = self.game.project(self.pos(p), recipient);
        Ok(ErasedProjection {
            view: RawJson::encode(&pr.view).map_err(|source| DecodeError::Json { what: "view", source })?,
            context: RawJson::encode(&pr.context).map_err(|source| DecodeError::Json { what: "context", source })?,
            result: pr.result,
        })
    }

    fn project_events(
        &self,
        before: &LoadedPosition,
        after: &LoadedPosition,
        events: &LoadedEvents,
        recipient: Recipient<'_>,
    ) -> Result<Vec<VisibleEvent>, DecodeError> {
        let events = events.0.downcast_ref::<Vec<G::Event>>().ok_or(DecodeError::WrongGame)?;
        let (before, after) = (self.pos(before), self.pos(after));
        events
            .iter()
            .flat_map(|e| self.game.project_event(before, after, e, recipient))
            .map(|v| {
                let (event_type, data) = split_tagged_raw("visible event", &v, "data")?;
                Ok(VisibleEvent { event_type, data })
            })
            .collect()
    }

    fn participants<'a>(&self, p: &'a LoadedPosition) -> &'a BTreeMap<Seat, Participant> {
        &self.pos(p).participants
    }

    fn cancelled(&self, p: &LoadedPosition, reason_code: &str) -> ErasedTransition {
        let pos = self.pos(p);
        let t: Trans<G> = crate::game::Transition {
            data: pos.data.clone(),
            flow: pos.flow.terminal(),
            result: Some(MatchResult::cancelled(reason_code)),
            events: Vec::new(),
            deadlines: Vec::new(),
        };
        self.finish(pos.config.clone(), pos.participants.clone(), t)
    }

    fn with_withdrawn(&self, p: &LoadedPosition, seat: &str) -> LoadedPosition {
        let mut next = self.pos(p).clone();
        if let Some(participant) = next.participants.get_mut(seat) {
            participant.status = crate::position::ParticipantStatus::Withdrawn;
        }
        LoadedPosition(Box::new(next))
    }

    fn bot_action(
        &self,
        p: &LoadedPosition,
        seat: &str,
        profile: &str,
        entropy: &mut dyn EntropySource,
    ) -> Option<(String, Value)> {
        let action = self.game.bot_action(self.pos(p), seat, profile, entropy)?;
        split_tagged(serde_json::to_value(&action).ok()?, "payload").ok()
    }
}

/// Serializes an adjacently tagged value `{"type": t, <content>: c}` and splits the text into
/// `(t, c)` without a `Value` tree; a missing content becomes `{}`.
fn split_tagged_raw<T: Serialize>(
    what: &'static str,
    v: &T,
    content: &'static str,
) -> Result<(String, RawJson), DecodeError> {
    /// The two keys of an adjacently tagged value, borrowed from its text.
    #[derive(serde::Deserialize)]
    struct Tagged<'a> {
        r#type: String,
        #[serde(borrow, alias = "payload")]
        data: Option<&'a serde_json::value::RawValue>,
    }
    // serde's own shape of an adjacently tagged value, split while it is written; anything
    // else is read back from its text (and fails there with its reason).
    if let Ok((tag, data)) = crate::tagged::split(v, content) {
        let data =
            data.unwrap_or_else(|| serde_json::value::RawValue::from_string("{}".to_owned()).expect("valid JSON"));
        return Ok((tag, RawJson::from(data)));
    }
    let text = serde_json::to_string(v).map_err(|source| DecodeError::Json { what, source })?;
    let tagged: Tagged<'_> = serde_json::from_str(&text).map_err(|_| DecodeError::NotTagged(content))?;
    let data = match tagged.data {
        Some(raw) => RawJson::from(raw.to_owned()),
        None => RawJson::from(serde_json::value::RawValue::from_string("{}".to_owned()).expect("valid JSON")),
    };
    Ok((tagged.r#type, data))
}

/// Splits an adjacently tagged value `{"type": t, <content>: c}` into `(t, c)`; a missing
/// content becomes `{}`.
fn split_tagged(v: Value, content: &'static str) -> Result<(String, Value), DecodeError> {
    let Value::Object(mut map) = v else { return Err(DecodeError::NotTagged(content)) };
    let Some(Value::String(t)) = map.remove("type") else { return Err(DecodeError::NotTagged(content)) };
    let c = map.remove(content).unwrap_or_else(|| Value::Object(Default::default()));
    Ok((t, c))
}
