//! Conecta 4 rules 1.1.0 ([`Conecta4V11`]): the 1.0.0 rules with one change, the centre
//! opening rule. The first disc of a match may not be dropped in a centre column (the
//! middle one of an odd number of columns, either middle one of an even number): a drop
//! there is refused (`centre-opening`) and not offered. Everything else — config, data,
//! actions, events, view, context, schemas and the bot (which opens beside the centre) — is
//! 1.0.0's, so the two modules differ in behaviour and in their descriptor's versions only,
//! and run side by side in one registry: a match keeps the rules it was created with.

use juegoland_sdk::{
    Corrupt, Descriptor, EntropySource, Game, Lifecycle, Offer, Pos, Projection, Recipient, RuleError, Services, Setup,
    Trans,
};

use crate::model::{Action, Config, Context, Data, DropPayload, Event, View, VisibleEvent};
use crate::{Conecta4, default_column};

/// The rules version (and package version) of [`Conecta4V11`].
pub const VERSION_1_1: &str = "1.1.0";
/// Refusal reason: the first disc was aimed at a centre column.
pub const REASON_CENTRE_OPENING: &str = "centre-opening";

/// The Conecta 4 rules, version 1.1.0: 1.0.0 with the centre opening rule.
#[derive(Clone, Copy, Debug, Default)]
pub struct Conecta4V11;

/// Twice a column's distance from the board's middle (an integer for every board width).
fn off_centre(config: &Config, column: u8) -> i16 {
    (2 * i16::from(column) - i16::from(config.columns) + 1).abs()
}

/// Whether `column` is a centre column of the board.
pub fn is_centre(config: &Config, column: u8) -> bool {
    off_centre(config, column) <= 1
}

/// Whether the rule forbids `column` as this position's next drop.
fn forbidden(position: &Pos<Conecta4V11>, column: u8) -> bool {
    position.data.move_count == 0 && is_centre(&position.config, column)
}

impl Game for Conecta4V11 {
    type Config = Config;
    type Data = Data;
    type Action = Action;
    type Event = Event;
    type View = View;
    type Context = Context;
    type VisibleEvent = VisibleEvent;

    fn descriptor(&self) -> Descriptor {
        Descriptor { version: VERSION_1_1.to_owned(), rules_version: VERSION_1_1.to_owned(), ..Conecta4.descriptor() }
    }

    fn spectators(&self) -> bool {
        Conecta4.spectators()
    }

    fn handover(&self) -> juegoland_sdk::Handover {
        Conecta4.handover()
    }

    fn setup(&self, input: &Setup<Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        Conecta4.setup(input, services)
    }

    fn validate_position(&self, position: &Pos<Self>) -> Result<(), Corrupt> {
        Conecta4.validate_position(position)
    }

    fn apply(
        &self,
        position: &Pos<Self>,
        actor: &str,
        action: &Action,
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        let Action::Drop(DropPayload { column }) = *action;
        if !position.is_finished() && forbidden(position, column) {
            return Err(RuleError::illegal(REASON_CENTRE_OPENING));
        }
        Conecta4.apply(position, actor, action, services)
    }

    fn available_actions(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Vec<Offer<Action>> {
        let mut offers = Conecta4.available_actions(position, recipient);
        offers.retain(
            |o| !matches!(o, Offer::Concrete(Action::Drop(DropPayload { column })) if forbidden(position, *column)),
        );
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
        match event {
            // A `defaultMove` drops where the rule allows (see [`default_drop`]).
            Lifecycle::DeadlineExpired { id, payload } => {
                crate::timeout(position, id, payload, services.now_ms(), default_drop)
            }
            Lifecycle::Withdrawal { .. } => Conecta4.on_lifecycle(position, event, services),
        }
    }

    fn bot_action(
        &self,
        position: &Pos<Self>,
        seat: &str,
        profile: &str,
        entropy: &mut dyn EntropySource,
    ) -> Option<Action> {
        match Conecta4.bot_action(position, seat, profile, entropy)? {
            Action::Drop(DropPayload { column }) if forbidden(position, column) => {
                default_drop(&position.config, &position.data).map(Action::drop)
            }
            action => Some(action),
        }
    }
}

/// The column of a default move under 1.1.0: 1.0.0's centre-most column that is not full,
/// except at the opening, where it is the centre-most column beside the centre (the
/// leftmost of two equally central ones).
pub fn default_drop(config: &Config, data: &Data) -> Option<u8> {
    if data.move_count > 0 {
        return default_column(config, &data.grid);
    }
    (0..config.columns).filter(|c| !is_centre(config, *c)).min_by_key(|c| (off_centre(config, *c), *c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{commit, start, with_services};
    use juegoland_sdk::{SplitMix64, erase};

    #[test]
    fn the_two_versions_differ_in_their_versions_only() {
        let (old, new) = (erase(Conecta4), erase(Conecta4V11));
        let (mut a, b) = (old.descriptor().clone(), new.descriptor().clone());
        assert_eq!((b.version.as_str(), b.rules_version.as_str()), ("1.1.0", "1.1.0"));
        a.version = b.version.clone();
        a.rules_version = b.rules_version.clone();
        assert_eq!(a, b);
        assert_eq!(old.schemas(), new.schemas());
    }

    fn offered(p: &Pos<Conecta4V11>, seat: &str) -> Vec<u8> {
        let offers = Conecta4V11.available_actions(p, Recipient::Seat(seat));
        offers
            .iter()
            .map(|o| match o {
                Offer::Concrete(Action::Drop(DropPayload { column })) => *column,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn the_opening_disc_may_not_go_in_the_centre_and_later_ones_may() {
        let p = start(Config::default());
        let drop = |game: &dyn Fn(&mut Services<'_>) -> Result<Trans<Conecta4>, RuleError>| with_services(game);
        let refused = drop(&|s| Conecta4V11.apply(&p, "p0", &Action::drop(3), s));
        assert_eq!(refused.err(), Some(RuleError::illegal(REASON_CENTRE_OPENING)));
        assert!(drop(&|s| Conecta4.apply(&p, "p0", &Action::drop(3), s)).is_ok(), "1.0.0 allows it");
        assert_eq!(offered(&p, "p0"), vec![0, 1, 2, 4, 5, 6]);
        let p = commit(&p, drop(&|s| Conecta4V11.apply(&p, "p0", &Action::drop(2), s)).unwrap());
        assert_eq!(offered(&p, "p1"), vec![0, 1, 2, 3, 4, 5, 6]);
        assert!(drop(&|s| Conecta4V11.apply(&p, "p1", &Action::drop(3), s)).is_ok(), "only the first disc is bound");
    }

    #[test]
    fn the_bot_and_the_default_move_open_beside_the_centre() {
        let p = start(Config::default());
        assert_eq!(Conecta4.bot_action(&p, "p0", crate::BOT_DEFAULT, &mut SplitMix64(1)), Some(Action::drop(3)));
        assert_eq!(Conecta4V11.bot_action(&p, "p0", crate::BOT_DEFAULT, &mut SplitMix64(1)), Some(Action::drop(2)));
        assert_eq!(default_drop(&p.config, &p.data), Some(2));
        assert_eq!(default_column(&p.config, &p.data.grid), Some(3));
        let eight = start(Config { columns: 8, ..Config::default() });
        assert_eq!(default_drop(&eight.config, &eight.data), Some(2));
    }

    #[test]
    fn centre_columns() {
        let seven = Config::default();
        assert_eq!((0..7).filter(|c| is_centre(&seven, *c)).collect::<Vec<_>>(), vec![3]);
        let eight = Config { columns: 8, ..Config::default() };
        assert_eq!((0..8).filter(|c| is_centre(&eight, *c)).collect::<Vec<_>>(), vec![3, 4]);
    }
}
