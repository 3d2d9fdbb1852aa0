//! Laberinto (`laberinto`, spec/games.md § Laberinto, seed `003_…`): two players race
//! through a walled maze in real time. The game proves the engine's `queue` policy
//! (commands ordered by arrival, judged against the state they meet), server-side clocks on
//! the captured instant (per-player cooldowns, a countdown and a 200 ms finish window as
//! deadlines) and bounded, chunked projections of a fog of war.
//!
//! Owns: maze generation (`maze.rs`: randomized Kruskal over one labelled shuffle of the
//! interior walls, then `loops` extra openings), the rules (`play.rs`), the projection
//! (`view.rs`), each player's memory of what it has seen (`memory.rs`), the bot (`bot.rs`:
//! it explores through the fog, from its seat's memory alone). Must not use: anything but
//! the SDK (no clock, no IO, no OS randomness, no tokio).
//!
//! Placement: p0 starts in the top-left cell and leaves through a drawn non-corner cell of
//! the bottom border (outward: south); p1 starts bottom-right and leaves through the top
//! border (outward: north). Each player's key and compass, and the vision artifacts, lie on
//! distinct drawn cells that are neither a start nor an exit.
//!
//! Phases: `countdown` (automatic: no actor, so a command there is refused
//! `ACTOR_NOT_ENABLED`; the `countdown` deadline starts the race; a `countdownMs` of 0
//! starts racing at once), then `racing` (multiple: each player in stage `race` with
//! `move` and `drop`, both `queue`; a player who left is in stage `out`, with none).
//!
//! Rejections (final, `ILLEGAL_ACTION`, no revision): a wall or the map's border (except
//! one's own open exit's outward side), an instant earlier than the player's last accepted
//! command's, a move before `cooldownMs` has passed since the player's last accepted move
//! (each player has their own clock; drops have no cooldown), a drop with an empty slot.
//!
//! Resolution of every accepted move, in order: (1) a vision effect counts down; (2) an
//! artifact on the destination is consumed and sets the effect to [`VISION_MOVES`] (never
//! stacked); (3) with an empty slot, the lowest-owner ground key there is picked up; (4)
//! landing on the rival's cell is a meeting: the meeting sequence rises and every carried
//! key returns to its owner, atomically; (5) one's own compass gives a bearing (one of
//! eight) to one's own exit, and any other move clears it; (6) entering one's own exit with
//! one's own key opens it.
//!
//! Finishing: from one's own open exit, a move out of the map. The first starts the finish
//! window ([`FINISH_WINDOW_MS`]); the rival going out at the same instant or up to and
//! including 200 ms later makes a draw; once the captured instant is strictly later — the
//! `finish` deadline (due 201 ms after) or any command judged then — the first wins. A
//! rival's key carried out is left on the exit cell (the key never leaves the maze but with
//! its owner).
//!
//! Withdrawal (this module's policy): in the countdown, the match is cancelled with no
//! winner; in the race, the leaver loses and the other wins.
//!
//! Privacy: a player's view holds only the cells within Chebyshev distance [`RADIUS`]
//! ([`VISION_RADIUS`] under a vision effect) of their cell, the objects there, the rival
//! only while within it (and then the key the rival carries); the view is rebuilt from the
//! position each time, so nothing seen earlier survives. Observers see everything.
//!
//! Memory: after every transition the rules record, per player, what its view shows (the
//! cells ever in its square, each key's last sighting, the bearing its compass gave:
//! [`model::Memory`]), so the stateless bot can play from what its seat has seen. It is
//! private data: no view, event or context carries it, to anyone.

mod bot;
pub mod maze;
pub mod memory;
pub mod model;
mod play;
pub mod view;

use juegoland_sdk::{
    ActionSpec, ConflictPolicy, Corrupt, Descriptor, EntropySource, Game, Lifecycle, Offer, Participation, PhaseSpec,
    Pos, Projection, Recipient, RuleError, Services, Setup, StageSpec, Trans,
};

pub use model::{Action, Config, Context, Data, Direction, DropPayload, Event, MovePayload, View, Visible};

/// The phases and stages.
pub const COUNTDOWN: &str = "countdown";
pub const RACING: &str = "racing";
pub const RACE: &str = "race";
pub const OUT: &str = "out";
/// The deadlines.
pub const COUNTDOWN_DEADLINE: &str = "countdown";
pub const FINISH_DEADLINE: &str = "finish";
/// The finish window: a rival going out within it (inclusive) makes a draw.
pub const FINISH_WINDOW_MS: i64 = 200;
/// The radius a player sees, and under a vision effect.
pub const RADIUS: u32 = 3;
pub const VISION_RADIUS: u32 = 6;
/// The successful moves a vision artifact lasts.
pub const VISION_MOVES: u32 = 10;

pub struct Laberinto;

impl Game for Laberinto {
    type Config = Config;
    type Data = Data;
    type Action = Action;
    type Event = Event;
    type View = View;
    type Context = Context;
    type VisibleEvent = Visible;

    fn descriptor(&self) -> Descriptor {
        Descriptor {
            id: "laberinto".into(),
            version: "1.0.0".into(),
            rules_version: "1.0.0".into(),
            state_schema_version: 1,
            view_schema_version: 1,
            event_schema_version: 1,
            min_seats: 2,
            max_seats: 2,
            phases: vec![
                PhaseSpec { id: COUNTDOWN.into(), participation: Participation::Automatic, stages: vec![] },
                PhaseSpec {
                    id: RACING.into(),
                    participation: Participation::Multiple,
                    stages: vec![
                        StageSpec { id: RACE.into(), actions: vec!["move".into(), "drop".into()] },
                        StageSpec { id: OUT.into(), actions: vec![] },
                    ],
                },
            ],
            actions: vec![
                ActionSpec::of::<MovePayload>("move", ConflictPolicy::Queue),
                ActionSpec::of::<DropPayload>("drop", ConflictPolicy::Queue),
            ],
            bots: vec!["default".into()],
            // No agent seats: Laberinto is real time (moves judged on the captured instant,
            // a cooldown per step, a 200 ms finish window), and an agent that reads a view,
            // thinks and answers over MCP or a socket would lose every race to its own
            // latency; an agent seat would be a seat that cannot play its game.
            agents: None,
        }
    }

    fn setup(&self, input: &Setup<Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        play::setup(input, services)
    }

    fn validate_position(&self, position: &Pos<Self>) -> Result<(), Corrupt> {
        play::validate(position)
    }

    fn apply(
        &self,
        position: &Pos<Self>,
        actor: &str,
        action: &Action,
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        play::apply(position, actor, action, services)
    }

    fn available_actions(&self, p: &Pos<Self>, recipient: Recipient<'_>) -> Vec<Offer<Action>> {
        let Some(seat) = recipient.seat() else { return vec![] };
        if p.flow.stage_of(seat) != Some(RACE) {
            return vec![];
        }
        let Some(me) = p.data.players.get(seat) else { return vec![] };
        let exit = p.data.exits[seat];
        let mut offers: Vec<Offer<Action>> = Direction::ALL
            .into_iter()
            .filter(|d| {
                maze::is_open(&p.data.cells, me.cell, *d) || (exit.open && exit.cell == me.cell && exit.side == *d)
            })
            .map(|direction| Offer::Concrete(Action::Move(MovePayload { direction })))
            .collect();
        if me.inventory.is_some() {
            offers.push(Offer::Concrete(Action::Drop(DropPayload {})));
        }
        offers
    }

    fn project(&self, p: &Pos<Self>, recipient: Recipient<'_>) -> Projection<View, Context> {
        Projection {
            view: view::project(p, recipient),
            context: Context { seat: recipient.seat().map(str::to_owned), race_starts_ms: Some(p.data.starts_ms) },
            result: p.result.clone(),
        }
    }

    fn project_event(&self, before: &Pos<Self>, after: &Pos<Self>, e: &Event, r: Recipient<'_>) -> Vec<Visible> {
        let own = |seat: &str| r.seat().is_none_or(|s| s == seat);
        let seen = |cell: u32| view::sees(after, r, cell);
        let _ = before;
        match e {
            Event::RaceStarted => vec![Visible::RaceStarted {}],
            Event::Moved { seat, to, .. } if own(seat) || seen(*to) => {
                vec![Visible::PlayerMoved { seat: seat.clone(), cell: *to }]
            }
            Event::KeyPicked { seat, owner, cell } if own(seat) || seen(*cell) => {
                vec![Visible::KeyPicked { seat: seat.clone(), owner: owner.clone() }]
            }
            Event::KeyDropped { seat, owner, cell } if own(seat) || seen(*cell) => {
                vec![Visible::KeyDropped { seat: seat.clone(), owner: owner.clone() }]
            }
            Event::Met { meeting_seq, .. } => vec![Visible::PlayersMet { meeting_seq: *meeting_seq }],
            Event::ExitOpened { seat } if own(seat) || seen(after.data.exits[seat].cell) => {
                vec![Visible::ExitOpened { seat: seat.clone() }]
            }
            Event::Finished { reason } => vec![Visible::MatchFinished { reason: reason.clone() }],
            _ => vec![],
        }
    }

    fn on_lifecycle(
        &self,
        position: &Pos<Self>,
        event: &Lifecycle,
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        play::on_lifecycle(position, event, services)
    }

    /// Observers see the whole maze, every object and both players (the profile's observer
    /// projection); they are offered nothing.
    fn spectators(&self) -> bool {
        true
    }

    fn bot_action(
        &self,
        position: &Pos<Self>,
        seat: &str,
        _profile: &str,
        _entropy: &mut dyn EntropySource,
    ) -> Option<Action> {
        bot::action(position, seat)
    }
}
