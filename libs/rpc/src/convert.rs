//! Conversions between the generated messages and the match API. Everything a request
//! carries is validated here, once; a field that does not convert is
//! [`MatchError::Invalid`] naming it.

use std::collections::{BTreeMap, HashMap};

use juegoland_api::{
    Controller, Created, FeedEvent, FeedPage, ListedSeat, MatchError, MatchListing, MatchPage, MatchQuery, MatchReply,
    MatchRequest, MatchStatus, MatchSummary, SeatSummary, SyncReply,
};
use juegoland_core::{GameChoice, GameKey, LifecycleRequest, PackagePin, SeatHolder};
use juegoland_protocol::{ClientMessage, CommandEnvelope, ServerMessage, decode_client, decode_server, encode};
use juegoland_sdk::ParticipantStatus;
use uuid::Uuid;

use crate::pb;
use crate::pb::match_reply::Reply;
use crate::pb::match_request::Request;

/// A request on the wire.
pub fn request_to_pb(request: &MatchRequest) -> pb::MatchRequest {
    let request = match request {
        MatchRequest::Create { match_id, game, seats, config, options } => Request::Create(pb::CreateMatchRequest {
            match_id: match_id.to_string(),
            game: Some(pb::GameKey {
                id: game.id.clone(),
                rules_version: game.rules_version.clone().unwrap_or_default(),
            }),
            seats: seats_to_pb(seats),
            config_json: config.to_string(),
            package_version: game.package_version.clone().unwrap_or_default(),
            handover_json: options.handover.as_ref().map(to_json).unwrap_or_default(),
            expiry_json: options.expiry.as_ref().map(to_json).unwrap_or_default(),
        }),
        MatchRequest::Replay { match_id, source, speed_percent } => Request::Replay(pb::ReplayMatchRequest {
            match_id: match_id.to_string(),
            source: source.to_string(),
            speed_percent: *speed_percent,
        }),
        MatchRequest::Presence { match_id, principal, subscription, present } => {
            Request::Presence(pb::PresenceRequest {
                match_id: match_id.to_string(),
                principal: principal.clone(),
                subscription: subscription.clone(),
                present: *present,
            })
        }
        MatchRequest::Command { principal, envelope } => Request::Command(pb::SubmitCommandRequest {
            principal: principal.clone(),
            envelope_json: juegoland_protocol::encode_client(&ClientMessage::Command(envelope.clone())),
        }),
        MatchRequest::CommandStatus { match_id, principal, command_id } => {
            Request::CommandStatus(pb::CommandStatusRequest {
                match_id: match_id.to_string(),
                principal: principal.clone(),
                command_id: command_id.to_string(),
            })
        }
        MatchRequest::Sync { match_id, principal } => {
            Request::Sync(pb::SyncRequest { match_id: match_id.to_string(), principal: principal.clone() })
        }
        MatchRequest::Spectate { match_id } => {
            Request::Spectate(pb::SpectateRequest { match_id: match_id.to_string() })
        }
        MatchRequest::Lifecycle { match_id, request } => {
            let match_id = match_id.to_string();
            match request {
                LifecycleRequest::Withdraw { seat } => {
                    Request::Withdraw(pb::WithdrawRequest { match_id, seat: seat.clone() })
                }
                LifecycleRequest::FireDeadline { id, generation } => Request::FireDeadline(pb::FireDeadlineRequest {
                    match_id,
                    deadline_id: id.clone(),
                    generation: *generation,
                }),
                LifecycleRequest::Cancel { reason_code } => {
                    Request::Cancel(pb::CancelRequest { match_id, reason_code: reason_code.clone() })
                }
                LifecycleRequest::Control { seat, stand_in } => Request::Control(pb::ControlRequest {
                    match_id,
                    seat: seat.clone(),
                    stand_in: stand_in.clone().unwrap_or_default(),
                }),
            }
        }
        MatchRequest::Revision { match_id } => {
            Request::Revision(pb::RevisionRequest { match_id: match_id.to_string() })
        }
        MatchRequest::Describe { match_id } => {
            Request::Describe(pb::DescribeRequest { match_id: match_id.to_string() })
        }
    };
    pb::MatchRequest { request: Some(request) }
}

/// A request from the wire, validated. A creation without an id gets a fresh one (the
/// platform's gRPC callers may leave it to the router).
pub fn request(request: pb::MatchRequest) -> Result<MatchRequest, MatchError> {
    let lifecycle =
        |match_id: &str, request| Ok(MatchRequest::Lifecycle { match_id: uuid_field("match_id", match_id)?, request });
    match request.request.ok_or_else(|| MatchError::Invalid("request: missing".into()))? {
        Request::Create(r) => Ok(MatchRequest::Create {
            match_id: match r.match_id.as_str() {
                "" => juegoland_api::random_uuid(),
                id => uuid_field("match_id", id)?,
            },
            game: game_choice(r.game, r.package_version)?,
            seats: seats(r.seats)?,
            config: serde_json::from_str(&r.config_json)
                .map_err(|e| MatchError::Invalid(format!("config_json: {e}")))?,
            options: juegoland_core::CreateOptions {
                handover: from_json_field("handover_json", &r.handover_json)?,
                expiry: from_json_field("expiry_json", &r.expiry_json)?,
            },
        }),
        Request::Replay(r) => Ok(MatchRequest::Replay {
            match_id: match r.match_id.as_str() {
                "" => juegoland_api::random_uuid(),
                id => uuid_field("match_id", id)?,
            },
            source: uuid_field("source", &r.source)?,
            speed_percent: r.speed_percent,
        }),
        Request::Presence(r) => Ok(MatchRequest::Presence {
            match_id: uuid_field("match_id", &r.match_id)?,
            principal: principal(r.principal)?,
            subscription: r.subscription,
            present: r.present,
        }),
        Request::Control(r) => lifecycle(
            &r.match_id,
            LifecycleRequest::Control { seat: r.seat, stand_in: Some(r.stand_in).filter(|s| !s.is_empty()) },
        ),
        Request::Command(r) => {
            Ok(MatchRequest::Command { principal: principal(r.principal)?, envelope: envelope(&r.envelope_json)? })
        }
        Request::CommandStatus(r) => Ok(MatchRequest::CommandStatus {
            match_id: uuid_field("match_id", &r.match_id)?,
            principal: principal(r.principal)?,
            command_id: uuid_field("command_id", &r.command_id)?,
        }),
        Request::Sync(r) => Ok(MatchRequest::Sync {
            match_id: uuid_field("match_id", &r.match_id)?,
            principal: principal(r.principal)?,
        }),
        Request::Spectate(r) => Ok(MatchRequest::Spectate { match_id: uuid_field("match_id", &r.match_id)? }),
        Request::Withdraw(r) => lifecycle(&r.match_id, LifecycleRequest::Withdraw { seat: r.seat }),
        Request::FireDeadline(r) => {
            lifecycle(&r.match_id, LifecycleRequest::FireDeadline { id: r.deadline_id, generation: r.generation })
        }
        Request::Cancel(r) => lifecycle(&r.match_id, LifecycleRequest::Cancel { reason_code: r.reason_code }),
        Request::Revision(r) => Ok(MatchRequest::Revision { match_id: uuid_field("match_id", &r.match_id)? }),
        Request::Describe(r) => Ok(MatchRequest::Describe { match_id: uuid_field("match_id", &r.match_id)? }),
    }
}

/// A reply on the wire.
pub fn reply_to_pb(reply: &MatchReply) -> pb::MatchReply {
    let reply = match reply {
        MatchReply::Created(c) => Reply::Created(pb::CreateMatchReply {
            match_id: c.match_id.to_string(),
            revision: 0,
            game: Some(game_key_to_pb(&c.game)),
            rules_digest: c.rules_digest.clone(),
            package: c.package.as_ref().map(package_pin_to_pb),
            client_url: c.client_url.clone().unwrap_or_default(),
        }),
        MatchReply::Message(message) => Reply::MessageJson(encode(message)),
        MatchReply::Snapshot(s) => Reply::Snapshot(pb::SyncSnapshot {
            seat: s.seat.clone(),
            revision: s.revision,
            game: Some(game_key_to_pb(&s.game)),
            view_schema_version: s.view_schema_version,
            event_schema_version: s.event_schema_version,
            snapshot_json: encode(&s.snapshot),
        }),
        MatchReply::Revision(revision) => Reply::Revision(*revision),
        MatchReply::Summary(summary) => Reply::Summary(summary_to_pb(summary)),
    };
    pb::MatchReply { reply: Some(reply) }
}

/// A reply from the wire. A node's reply that does not decode is its fault: `Internal`.
pub fn reply(reply: pb::MatchReply) -> Result<MatchReply, MatchError> {
    let node = |e: MatchError| MatchError::Internal(format!("a node's reply: {e}"));
    match reply.reply.ok_or_else(|| MatchError::Internal("an empty reply".into()))? {
        Reply::Created(r) => Ok(MatchReply::Created(Created {
            match_id: uuid_field("match_id", &r.match_id).map_err(node)?,
            game: game_key(r.game).map_err(node)?,
            rules_digest: r.rules_digest,
            package: r.package.map(package_pin),
            client_url: Some(r.client_url).filter(|u| !u.is_empty()),
        })),
        Reply::MessageJson(json) => Ok(MatchReply::Message(server_message(&json)?)),
        Reply::Snapshot(s) => Ok(MatchReply::Snapshot(Box::new(SyncReply {
            seat: s.seat,
            revision: s.revision,
            game: game_key(s.game).map_err(node)?,
            view_schema_version: s.view_schema_version,
            event_schema_version: s.event_schema_version,
            snapshot: server_message(&s.snapshot_json)?,
        }))),
        Reply::Revision(revision) => Ok(MatchReply::Revision(revision)),
        Reply::Summary(summary) => Ok(MatchReply::Summary(Box::new(self::summary(summary).map_err(node)?))),
    }
}

fn package_pin_to_pb(p: &PackagePin) -> pb::PackagePin {
    pb::PackagePin { id: p.id.clone(), version: p.version.clone(), lock_digest: p.lock_digest.clone() }
}

fn package_pin(p: pb::PackagePin) -> PackagePin {
    PackagePin { id: p.id, version: p.version, lock_digest: p.lock_digest }
}

fn seat_summary_to_pb(seat: &SeatSummary) -> pb::SeatSummary {
    pb::SeatSummary {
        seat: seat.seat.clone(),
        controller: Some(pb::SeatHolder {
            holder: Some(match &seat.controller {
                Controller::Human { principal } | Controller::Handover { principal, .. } => {
                    pb::seat_holder::Holder::Principal(principal.clone())
                }
                Controller::Bot { profile } => pb::seat_holder::Holder::Bot(profile.clone()),
                Controller::Replay => pb::seat_holder::Holder::Replay(pb::ReplayScript {}),
                Controller::Agent { profile } => pb::seat_holder::Holder::Agent(profile.clone()),
            }),
        }),
        status: participant_status(seat.status).to_owned(),
        team: seat.team.clone().unwrap_or_default(),
        stand_in: match &seat.controller {
            Controller::Handover { profile, .. } => profile.clone(),
            _ => String::new(),
        },
        own_moves: seat.moves.own,
        stand_in_moves: seat.moves.stand_in,
    }
}

fn summary_to_pb(s: &MatchSummary) -> pb::MatchSummary {
    pb::MatchSummary {
        match_id: s.match_id.to_string(),
        game: Some(game_key_to_pb(&s.game)),
        game_version: s.game_version.clone(),
        rules_digest: s.rules_digest.clone(),
        package: s.package.as_ref().map(package_pin_to_pb),
        status: s.status.as_str().to_owned(),
        revision: s.revision,
        seats: s.seats.iter().map(seat_summary_to_pb).collect(),
        result_json: s
            .result
            .as_ref()
            .map(|r| serde_json::to_string(r).expect("a result serializes"))
            .unwrap_or_default(),
        created_ms: s.created_ms,
        handover_json: s.handover.as_ref().map(to_json).unwrap_or_default(),
        replay_of: s.replay_of.as_ref().map(|r| pb::ReplayMatchRequest {
            match_id: String::new(),
            source: r.source.to_string(),
            speed_percent: r.speed_percent,
        }),
        client_url: s.client_url.clone().unwrap_or_default(),
    }
}

/// A value as its JSON text (what `*_json` fields carry).
fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("a plain value serializes")
}

/// A `*_json` field: empty is `None`; anything else must be the type's JSON.
fn from_json_field<T: serde::de::DeserializeOwned>(field: &str, json: &str) -> Result<Option<T>, MatchError> {
    match json {
        "" => Ok(None),
        json => serde_json::from_str(json).map(Some).map_err(|e| MatchError::Invalid(format!("{field}: {e}"))),
    }
}

/// A listing query on the wire (empty fields: any).
pub fn match_query_to_pb(q: &MatchQuery) -> pb::ListMatchesRequest {
    pb::ListMatchesRequest {
        principal: q.principal.clone().unwrap_or_default(),
        game: q.game.clone().unwrap_or_default(),
        status: q.status.map(|s| s.as_str().to_owned()).unwrap_or_default(),
        after: q.after.as_ref().map(ToString::to_string).unwrap_or_default(),
        limit: q.limit,
    }
}

/// A listing query from the wire, validated like the HTTP query (`MatchQuery::parse`).
pub fn match_query(r: pb::ListMatchesRequest) -> Result<MatchQuery, MatchError> {
    let given = |v: String| Some(v).filter(|v| !v.is_empty());
    let status = given(r.status);
    let after = given(r.after);
    MatchQuery::parse(
        given(r.principal),
        given(r.game),
        status.as_deref(),
        after.as_deref(),
        Some(r.limit).filter(|l| *l != 0),
    )
    .map_err(|e| MatchError::Invalid(format!("{}: {}", e.field, e.message)))
}

/// A feed query from the wire: where to resume and how many.
pub fn feed_query(r: &pb::ReadFeedRequest) -> Result<(juegoland_api::FeedCursor, u32), MatchError> {
    let after = Some(r.after.as_str()).filter(|a| !a.is_empty());
    juegoland_api::feed_query(after, Some(r.limit).filter(|l| *l != 0))
        .map_err(|e| MatchError::Invalid(format!("{}: {}", e.field, e.message)))
}

pub fn match_page_to_pb(page: &MatchPage) -> pb::MatchPage {
    let listing = |m: &MatchListing| pb::MatchListing {
        match_id: m.match_id.to_string(),
        game: Some(game_key_to_pb(&m.game)),
        game_version: m.game_version.clone(),
        status: m.status.as_str().to_owned(),
        created_ms: m.created_ms,
        seats: m
            .seats
            .iter()
            .map(|s| {
                seat_summary_to_pb(&SeatSummary {
                    seat: s.seat.clone(),
                    controller: s.controller.clone(),
                    status: s.status,
                    team: None,
                    moves: Default::default(),
                })
            })
            .collect(),
    };
    pb::MatchPage { matches: page.matches.iter().map(listing).collect(), next: page.next.clone().unwrap_or_default() }
}

pub fn match_page(page: pb::MatchPage) -> Result<MatchPage, MatchError> {
    let listing = |m: pb::MatchListing| {
        let status = juegoland_api::ListedStatus::parse(&m.status)
            .ok_or_else(|| MatchError::Invalid(format!("status: unknown value {:?}", m.status)))?;
        let seats = m
            .seats
            .into_iter()
            .map(|s| {
                let s = seat_summary(s)?;
                Ok(ListedSeat { seat: s.seat, controller: s.controller, status: s.status })
            })
            .collect::<Result<_, MatchError>>()?;
        Ok(MatchListing {
            match_id: uuid_field("match_id", &m.match_id)?,
            game: game_key(m.game)?,
            game_version: m.game_version,
            status,
            created_at: String::new(),
            created_ms: m.created_ms,
            seats,
        })
    };
    Ok(MatchPage {
        matches: page.matches.into_iter().map(listing).collect::<Result<_, MatchError>>()?,
        next: Some(page.next).filter(|n| !n.is_empty()),
    })
}

pub fn feed_page_to_pb(page: &FeedPage) -> pb::FeedPage {
    let event = |e: &FeedEvent| pb::FeedEvent {
        id: e.id.clone(),
        kind: e.kind.clone(),
        at_ms: e.at_ms,
        cursor: e.cursor.clone(),
        r#match: Some(summary_to_pb(&e.summary)),
    };
    pb::FeedPage { events: page.events.iter().map(event).collect(), next: page.next.clone() }
}

pub fn feed_page(page: pb::FeedPage) -> Result<FeedPage, MatchError> {
    let event = |e: pb::FeedEvent| {
        let summary = summary(e.r#match.ok_or_else(|| MatchError::Invalid("events.match: missing".into()))?)?;
        Ok(FeedEvent { id: e.id, kind: e.kind, at_ms: e.at_ms, cursor: e.cursor, summary })
    };
    Ok(FeedPage { events: page.events.into_iter().map(event).collect::<Result<_, MatchError>>()?, next: page.next })
}

fn participant_status(status: ParticipantStatus) -> &'static str {
    match status {
        ParticipantStatus::Active => "active",
        ParticipantStatus::Withdrawn => "withdrawn",
    }
}

fn seat_summary(seat: pb::SeatSummary) -> Result<SeatSummary, MatchError> {
    let invalid = |field: &str, value: &str| MatchError::Invalid(format!("{field}: unknown value {value:?}"));
    let controller = match (seat.controller.and_then(|c| c.holder), seat.stand_in) {
        (Some(pb::seat_holder::Holder::Principal(principal)), profile) if !profile.is_empty() => {
            Controller::Handover { principal, profile }
        }
        (Some(pb::seat_holder::Holder::Principal(principal)), _) => Controller::Human { principal },
        (Some(pb::seat_holder::Holder::Bot(profile)), _) => Controller::Bot { profile },
        (Some(pb::seat_holder::Holder::Replay(_)), _) => Controller::Replay,
        (Some(pb::seat_holder::Holder::Agent(profile)), _) => Controller::Agent { profile },
        (None, _) => return Err(MatchError::Invalid(format!("seats.{}.controller: missing", seat.seat))),
    };
    let status = match seat.status.as_str() {
        "active" => ParticipantStatus::Active,
        "withdrawn" => ParticipantStatus::Withdrawn,
        other => return Err(invalid("seats.status", other)),
    };
    let team = Some(seat.team).filter(|t| !t.is_empty());
    let moves = juegoland_core::SeatMoves { own: seat.own_moves, stand_in: seat.stand_in_moves };
    Ok(SeatSummary { seat: seat.seat, controller, status, team, moves })
}

fn summary(s: pb::MatchSummary) -> Result<MatchSummary, MatchError> {
    let invalid = |field: &str, value: &str| MatchError::Invalid(format!("{field}: unknown value {value:?}"));
    let status = match s.status.as_str() {
        "active" => MatchStatus::Active,
        "finished" => MatchStatus::Finished,
        "cancelled" => MatchStatus::Cancelled,
        other => return Err(invalid("status", other)),
    };
    let seats = s.seats.into_iter().map(seat_summary).collect::<Result<_, _>>()?;
    let result = match s.result_json.as_str() {
        "" => None,
        json => Some(serde_json::from_str(json).map_err(|e| MatchError::Invalid(format!("result_json: {e}")))?),
    };
    Ok(MatchSummary {
        match_id: uuid_field("match_id", &s.match_id)?,
        game: game_key(s.game)?,
        game_version: s.game_version,
        rules_digest: s.rules_digest,
        package: s.package.map(package_pin),
        status,
        revision: s.revision,
        seats,
        result,
        created_ms: s.created_ms,
        handover: from_json_field("handover_json", &s.handover_json)?,
        replay_of: s
            .replay_of
            .map(|r| {
                Ok::<_, MatchError>(juegoland_core::ReplayOf {
                    source: uuid_field("replay_of.source", &r.source)?,
                    speed_percent: r.speed_percent,
                })
            })
            .transpose()?,
        client_url: Some(s.client_url).filter(|u| !u.is_empty()),
    })
}

/// A UUID field; `field` names it in the error.
pub fn uuid_field(field: &str, text: &str) -> Result<Uuid, MatchError> {
    Uuid::parse_str(text).map_err(|e| MatchError::Invalid(format!("{field}: {e}")))
}

pub fn game_key_to_pb(key: &GameKey) -> pb::GameKey {
    pb::GameKey { id: key.id.clone(), rules_version: key.rules_version.clone() }
}

/// A creation's choice: the game's id is required; an empty rules or package version is left
/// for the engine to choose.
fn game_choice(key: Option<pb::GameKey>, package_version: String) -> Result<GameChoice, MatchError> {
    let key = key.ok_or_else(|| MatchError::Invalid("game: missing".into()))?;
    if key.id.is_empty() {
        return Err(MatchError::Invalid("game: id is required".into()));
    }
    let given = |v: String| Some(v).filter(|v| !v.is_empty());
    Ok(GameChoice { id: key.id, rules_version: given(key.rules_version), package_version: given(package_version) })
}

/// A required game key.
pub fn game_key(key: Option<pb::GameKey>) -> Result<GameKey, MatchError> {
    let key = key.ok_or_else(|| MatchError::Invalid("game: missing".into()))?;
    if key.id.is_empty() || key.rules_version.is_empty() {
        return Err(MatchError::Invalid("game: id and rules_version are required".into()));
    }
    Ok(GameKey { id: key.id, rules_version: key.rules_version })
}

pub fn seats_to_pb(seats: &BTreeMap<String, SeatHolder>) -> HashMap<String, pb::SeatHolder> {
    seats
        .iter()
        .map(|(seat, holder)| {
            let holder = match holder {
                SeatHolder::Principal(p) => pb::seat_holder::Holder::Principal(p.clone()),
                SeatHolder::Bot(b) => pb::seat_holder::Holder::Bot(b.clone()),
                SeatHolder::Replay => pb::seat_holder::Holder::Replay(pb::ReplayScript {}),
                SeatHolder::Agent(a) => pb::seat_holder::Holder::Agent(a.clone()),
            };
            (seat.clone(), pb::SeatHolder { holder: Some(holder) })
        })
        .collect()
}

/// The seats of a creation: every seat has exactly one non-empty holder.
pub fn seats(seats: HashMap<String, pb::SeatHolder>) -> Result<BTreeMap<String, SeatHolder>, MatchError> {
    seats
        .into_iter()
        .map(|(seat, holder)| {
            let holder = match holder.holder {
                Some(pb::seat_holder::Holder::Principal(p)) if !p.is_empty() => SeatHolder::Principal(p),
                Some(pb::seat_holder::Holder::Bot(b)) if !b.is_empty() => SeatHolder::Bot(b),
                Some(pb::seat_holder::Holder::Agent(a)) if !a.is_empty() => SeatHolder::Agent(a),
                _ => {
                    return Err(MatchError::Invalid(format!(
                        "seats.{seat}: a principal, a bot or an agent is required"
                    )));
                }
            };
            Ok((seat, holder))
        })
        .collect()
}

/// A `game.command` JSON, through the protocol's strict decoder.
pub fn envelope(json: &str) -> Result<CommandEnvelope, MatchError> {
    match decode_client(json.as_bytes()) {
        Ok(ClientMessage::Command(envelope)) => Ok(envelope),
        Ok(other) => {
            Err(MatchError::Invalid(format!("envelope: a game.command is required, not {}", other.message_type())))
        }
        Err(e) => Err(MatchError::Invalid(format!("envelope: {e}"))),
    }
}

/// A server message a node sent, through the protocol's strict decoder.
pub fn server_message(json: &str) -> Result<ServerMessage, MatchError> {
    decode_server(json.as_bytes()).map_err(|e| MatchError::Internal(format!("server message from the node: {e}")))
}

/// A game's agent declaration as the routers' `ListGames` carries it (modes and difficulties
/// by their JSON names).
pub fn virtual_players_to_pb(v: &juegoland_sdk::VirtualPlayers) -> pb::VirtualPlayers {
    pb::VirtualPlayers {
        instructions: v.instructions.clone(),
        profiles: v
            .profiles
            .iter()
            .map(|p| pb::AgentProfile {
                id: p.id.clone(),
                display_name: p.display_name.clone(),
                modes: p.modes.iter().map(|m| m.as_str().to_owned()).collect(),
                difficulties: p.difficulties.iter().map(|d| d.as_str().to_owned()).collect(),
                think_time_ms: p.limits.think_time_ms,
                commands_per_minute: p.limits.commands_per_minute,
            })
            .collect(),
    }
}

/// A principal a request names, held to the one rule of a principal's shape
/// (`juegoland_core::principal_shape`) as at every other door.
fn principal(principal: String) -> Result<String, MatchError> {
    juegoland_core::principal_shape(&principal).map_err(|why| MatchError::Invalid(format!("principal: {why}")))?;
    Ok(principal)
}
