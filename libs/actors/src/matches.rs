//! The host's answer to the match API: each [`MatchRequest`] becomes a message to the
//! match's actor (or, for a creation, the host's own creation), so the edge, the scheduler
//! and a node's gRPC service reach the actors through the one [`Matches::call`].

use std::sync::Arc;

use juegoland_api::{MatchError, MatchReply, MatchRequest, Matches};
use juegoland_core::Registry;

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
            MatchRequest::Create { match_id, game, seats, config } => {
                Ok(MatchReply::Created(self.create_match_with_id(match_id, &game, seats, &config).await?))
            }
            MatchRequest::Command { principal, envelope } => {
                let match_id = envelope.match_id;
                let answer = self
                    .ask(match_id, move |reply| MatchMsg::Command {
                        principal: principal.clone(),
                        envelope: envelope.clone(),
                        reply,
                        span: span.clone(),
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
        }
    }
}
