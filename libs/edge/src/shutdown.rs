//! Graceful shutdown of a gateway's client sessions ([`Shutdown`]).
//!
//! Owns the lifecycle of the gateway's sessions: the token whose cancellation tells every
//! connection's protocol loop to end (a [`CancellationToken`]), and the tracker that counts
//! the open sessions so that [`Shutdown::close_sessions`] can wait for them (a [`TaskTracker`]:
//! a Socket.IO session's task is spawned on it; a WebSocket session, whose task axum spawns,
//! holds one of its tokens while it runs).

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use socketioxide::SocketIo;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tokio_util::task::task_tracker::TaskTrackerToken;
use tracing::info;

/// Closes a gateway's client sessions when the process stops: the shell calls
/// [`Shutdown::close_sessions`] on SIGTERM, before it stops serving HTTP. WebSocket connections
/// get a close frame (1001, going away) and Socket.IO sessions are closed by socketioxide
/// (`SocketIo::close`: an engine.io close packet), so clients reconnect (to another gateway)
/// at once rather than finding a dead connection later. Sessions that start afterwards are
/// closed at once.
#[derive(Clone, Default)]
pub struct Shutdown(Arc<ShutdownState>);

#[derive(Default)]
struct ShutdownState {
    /// Cancelled when the shutdown begins.
    begun: CancellationToken,
    /// Open client sessions, WebSocket and Socket.IO; closed when the shutdown begins, so
    /// that waiting for it ends once none is open.
    sessions: TaskTracker,
    /// The Socket.IO servers to close.
    socket_io: Mutex<Vec<SocketIo>>,
}

impl fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shutdown")
            .field("begun", &self.0.begun.is_cancelled())
            .field("sessions", &self.0.sessions.len())
            .finish()
    }
}

impl Shutdown {
    /// Closes every client session and waits until all are gone or `grace` has passed;
    /// returns how many were still open then.
    pub async fn close_sessions(&self, grace: Duration) -> usize {
        self.0.begun.cancel();
        let open = self.0.sessions.len();
        info!(sessions = open, "closing client sessions");
        let servers: Vec<SocketIo> = self.0.socket_io.lock().unwrap_or_else(|p| p.into_inner()).clone();
        self.0.sessions.close();
        let closed = async {
            futures::future::join_all(servers.iter().map(|io| io.close())).await;
            self.0.sessions.wait().await;
        };
        let _ = tokio::time::timeout(grace, closed).await;
        self.0.sessions.len()
    }

    /// Resolves once the shutdown has begun (at once if it has).
    pub(crate) async fn begun(&self) {
        self.0.begun.cancelled().await;
    }

    /// A token cancelled when the shutdown begins (for servers that take one: the MCP
    /// server's streams end with it).
    pub(crate) fn token(&self) -> tokio_util::sync::CancellationToken {
        self.0.begun.child_token()
    }

    pub(crate) fn has_begun(&self) -> bool {
        self.0.begun.is_cancelled()
    }

    /// Registers a Socket.IO server for [`Shutdown::close_sessions`] to close.
    pub(crate) fn add_socket_io(&self, io: SocketIo) {
        self.0.socket_io.lock().unwrap_or_else(|p| p.into_inner()).push(io);
    }

    /// Counts an open session until the token is dropped: a WebSocket connection, whose task
    /// axum spawns.
    pub(crate) fn session(&self) -> TaskTrackerToken {
        self.0.sessions.token()
    }

    /// Spawns a session's task, counted as an open session until it ends: a Socket.IO
    /// connection's protocol loop.
    pub(crate) fn spawn_session(&self, session: impl Future<Output = ()> + Send + 'static) {
        self.0.sessions.spawn(session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::Ended;
    use crate::gateway::GatewayConfig;
    use crate::harness::Harness;

    #[tokio::test]
    async fn shutdown_ends_every_connection_and_waits_for_its_sessions() {
        let h = Harness::new(GatewayConfig::default());
        let shutdown = h.gateway.config.shutdown.clone();
        let (connection, _rx) = h.connect_and_sync(64);
        h.matches.permits.add_permits(1);
        let session = shutdown.session();
        let closing = tokio::spawn({
            let shutdown = shutdown.clone();
            async move { shutdown.close_sessions(Duration::from_secs(5)).await }
        });
        assert_eq!(connection.await.expect("the loop"), Ended::Shutdown);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!closing.is_finished(), "close_sessions waits for the open session");
        drop(session);
        assert_eq!(closing.await.expect("close_sessions"), 0);
        // A connection that starts afterwards ends at once.
        let (late, _rx) = h.connect_and_sync(64);
        assert_eq!(late.await.expect("the loop"), Ended::Shutdown);
    }
}
