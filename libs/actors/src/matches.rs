//! The host's answer to the match API: each [`MatchRequest`] becomes a message to the
//! match's actor (or, for a creation, the host's own creation), so the edge, the scheduler
//! and a node's gRPC service reach the actors through the one [`Matches::call`].

use std::sync::Arc;

use juegoland_api::{MatchError, MatchReply, MatchRequest, MatchSummary, Matches};
use juegoland_core::Registry;
use juegoland_protocol::Precondition;

use crate::actor::MatchMsg;
use crate::host::Host;

#[async_trait::async_trait]
impl Matches for Host {
    fn registry(&self) -> &Arc<Registry> {
        &self.engine().registry
    }

    async fn call(&self, request: MatchRequest) -> Result<MatchReply, MatchError> {
        // The caller's span (a node's `node.call`, a gateway's `gateway.command`) is the
        // parent of the actor's span, so a command stays one trace.
        let span = tracing::Span::current();
        match request {
            MatchRequest::Create { match_id, game, seats, config, mut options } => {
                // A platform's match expires unless its creation says otherwise.
                options.expiry.get_or_insert_with(juegoland_core::Expiry::default);
                Ok(MatchReply::Created(self.create_match_with_id(match_id, &game, seats, &config, &options).await?))
            }
            MatchRequest::Replay { match_id, source, speed_percent } => {
                Ok(MatchReply::Created(self.create_replay_with_id(match_id, source, speed_percent).await?))
            }
            MatchRequest::Presence { match_id, principal, subscription, present } => {
                let revision = self
                    .ask(match_id, move |reply| MatchMsg::Presence {
                        principal: principal.clone(),
                        subscription: subscription.clone(),
                        present,
                        reply,
                    })
                    .await??;
                Ok(MatchReply::Revision(revision))
            }
            MatchRequest::Command { principal, envelope } => {
                let match_id = envelope.match_id;
                // A `queue` command takes a place in the match's bounded FIFO first.
                let ticket = match envelope.precondition {
                    Precondition::Queue => {
                        let ticket = self.shared.queues.admit(match_id, self.shared.config.queue_capacity);
                        if ticket.is_none() {
                            self.shared.metrics.actor_events.with_label_values(&["queue_full"]).inc();
                            return Err(MatchError::RateLimited("the match's command queue is full".into()));
                        }
                        ticket
                    }
                    _ => None,
                };
                let answer = self
                    .ask(match_id, move |reply| MatchMsg::Command {
                        principal: principal.clone(),
                        envelope: envelope.clone(),
                        reply,
                        span: span.clone(),
                        ticket: ticket.clone(),
                    })
                    .await?;
                Ok(MatchReply::Message(answer))
            }
            MatchRequest::CommandStatus { match_id, principal, command_id } => {
                let answer = self
                    .ask(match_id, move |reply| MatchMsg::CommandStatus {
                        principal: principal.clone(),
                        command_id,
                        reply,
                    })
                    .await?;
                Ok(MatchReply::Message(answer))
            }
            MatchRequest::Sync { match_id, principal } => {
                let answer =
                    self.ask(match_id, move |reply| MatchMsg::Sync { principal: principal.clone(), reply }).await?;
                Ok(match answer {
                    Ok(snapshot) => MatchReply::Snapshot(Box::new(snapshot)),
                    Err(refusal) => MatchReply::Message(refusal.into()),
                })
            }
            MatchRequest::Spectate { match_id } => {
                let answer = self.ask(match_id, |reply| MatchMsg::Spectate { reply }).await?;
                Ok(match answer {
                    Ok(snapshot) => MatchReply::Snapshot(Box::new(snapshot)),
                    Err(refusal) => MatchReply::Message(refusal.into()),
                })
            }
            MatchRequest::Lifecycle { match_id, request } => {
                let revision = self
                    .ask(match_id, move |reply| MatchMsg::Lifecycle {
                        request: request.clone(),
                        reply,
                        span: span.clone(),
                    })
                    .await??;
                Ok(MatchReply::Revision(revision))
            }
            MatchRequest::Revision { match_id } => {
                Ok(MatchReply::Revision(self.ask(match_id, |reply| MatchMsg::Revision { reply }).await?))
            }
            MatchRequest::Describe { match_id } => {
                let state = self.ask(match_id, |reply| MatchMsg::Inspect { reply }).await?;
                Ok(MatchReply::Summary(Box::new(MatchSummary::of(&state))))
            }
        }
    }
}
