//! Conecta 4 1.0.0 with one thing broken, registered under its id and rules version, to show
//! that publishing runs the module's conformance checks (steps 5 and 6): its contract —
//! descriptor and schemas — is 1.0.0's, so steps 1-4 and the schema files pass.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use juegoland_conecta4::{Action, Conecta4, Config, Context, Data, DropPayload, Event, View, VisibleEvent};
use juegoland_sdk::{
    Corrupt, Descriptor, EntropySource, ErasedGame, Game, Lifecycle, Offer, Pos, Projection, Recipient, RuleError,
    Services, Setup, Trans,
};

#[derive(Clone, Copy, Debug)]
pub enum Broken {
    /// Every position with three discs breaks the rules' invariants.
    Invariant,
    /// The first time it decides a drop from a position it drops where asked; every later time
    /// one column over: a replay of the log decides otherwise than the match did.
    Nondeterministic,
    /// Offers a drop in column 42 beside the legal ones, which its action schema (columns
    /// 0-9) refuses.
    InvalidOffer,
}

impl Broken {
    pub fn module(self) -> Arc<dyn ErasedGame> {
        juegoland_sdk::erase(self)
    }
}

/// The (data, column) drops [`Broken::Nondeterministic`] has decided, in this process.
static DECIDED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

impl Game for Broken {
    type Config = Config;
    type Data = Data;
    type Action = Action;
    type Event = Event;
    type View = View;
    type Context = Context;
    type VisibleEvent = VisibleEvent;

    fn descriptor(&self) -> Descriptor {
        Conecta4.descriptor()
    }

    fn spectators(&self) -> bool {
        Conecta4.spectators()
    }

    fn setup(&self, input: &Setup<Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        Conecta4.setup(input, services)
    }

    fn validate_position(&self, position: &Pos<Self>) -> Result<(), Corrupt> {
        match self {
            Broken::Invariant if position.data.move_count >= 3 => Err(Corrupt("three discs".into())),
            _ => Conecta4.validate_position(position),
        }
    }

    fn apply(
        &self,
        position: &Pos<Self>,
        actor: &str,
        action: &Action,
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        let Action::Drop(DropPayload { column }) = *action;
        let key = format!("{}/{column}", serde_json::to_string(&position.data).unwrap());
        let decided_before = matches!(self, Broken::Nondeterministic) && !DECIDED.lock().unwrap().insert(key);
        let column = if decided_before { (column + 1) % position.config.columns } else { column };
        Conecta4.apply(position, actor, &Action::drop(column), services)
    }

    fn available_actions(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Vec<Offer<Action>> {
        let mut offers = Conecta4.available_actions(position, recipient);
        if matches!(self, Broken::InvalidOffer) && !offers.is_empty() {
            offers.push(Offer::Concrete(Action::drop(42)));
        }
        offers
    }

    fn project(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Projection<View, Context> {
        Conecta4.project(position, recipient)
    }

    fn project_event(
        &self,
        before: &Pos<Self>,
        after: &Pos<Self>,
        event: &Event,
        recipient: Recipient<'_>,
    ) -> Vec<VisibleEvent> {
        Conecta4.project_event(before, after, event, recipient)
    }

    fn on_lifecycle(
        &self,
        position: &Pos<Self>,
        event: &Lifecycle,
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        Conecta4.on_lifecycle(position, event, services)
    }

    fn bot_action(
        &self,
        position: &Pos<Self>,
        seat: &str,
        profile: &str,
        entropy: &mut dyn EntropySource,
    ) -> Option<Action> {
        Conecta4.bot_action(position, seat, profile, entropy)
    }
}
