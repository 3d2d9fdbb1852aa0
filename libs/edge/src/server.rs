//! The edge's HTTP server ([`serve`]): accepts connections, serves the edge's router on each
//! with hyper's HTTP/1 (upgrades included), and stops gracefully.
//!
//! Hand-rolled instead of `axum::serve` (about its size) because `axum::serve` sets no timer on
//! hyper's connection builder, so hyper's `header_read_timeout` never runs and a client that
//! sends its request head a byte at a time (slowloris) holds its connection for ever; it also
//! puts each connection's remote address in the requests ([`RemoteAddr`]) for the per-address
//! connection cap, and counts the head timeouts of connections that never completed a request
//! (`juegoland_edge_refused_total{reason="head_timeout"}`; an idle keep-alive connection
//! closed by the same timer after its requests is not abuse and is not counted).
//!
//! Every accepted connection has TCP_NODELAY. Without it, a server message written right
//! after another waits for the client's acknowledgement of the first (Nagle), which a client
//! delays by up to 40 ms (delayed ACK): that was most of the all-in-one's move → view p50
//! (docs/benchmarks.md, issue 18).

use std::convert::Infallible;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;
use tracing::{debug, warn};

use crate::http::{EdgeState, router};
use crate::limits::{Refusal, RemoteAddr};

/// Serves the edge on `listener` until `signal` resolves, then stops accepting, lets each
/// connection finish its request in flight and returns once they are done (upgraded
/// connections are the gateway's: `Shutdown` closes them).
pub async fn serve(
    listener: TcpListener,
    state: EdgeState,
    signal: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let head_timeout = state.limits().head_timeout;
    let per_address = state.limits().max_http_connections_per_address;
    let open = crate::limits::HttpConnections::default();
    let refused = state.refused();
    let app = router(state);
    let stop = CancellationToken::new();
    let tracker = TaskTracker::new();
    let mut signal = pin!(signal);
    loop {
        let (stream, remote) = tokio::select! {
            () = &mut signal => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors (a flood beyond the process's file limit) or a
                    // connection reset before it was accepted: wait a little, as axum does.
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Closed before a byte is read: an address holding its share of descriptors gets no
        // more, however fast it connects.
        let Some(permit) = open.open(remote.ip(), per_address) else {
            Refusal::HttpAddressCap.count(&refused);
            drop(stream);
            continue;
        };
        if let Err(e) = stream.set_nodelay(true) {
            debug!(error = %e, "could not set TCP_NODELAY on a connection");
        }
        let address = RemoteAddr(remote.ip());
        let served = Arc::new(AtomicBool::new(false));
        let service = app.clone().map_request({
            let served = served.clone();
            move |mut request: hyper::Request<Incoming>| {
                served.store(true, Ordering::Relaxed);
                request.extensions_mut().insert(address);
                request.map(Body::new)
            }
        });
        let service = TowerToHyperService::new(service.map_err(|e: Infallible| match e {}));
        let (stop, refused) = (stop.clone(), refused.clone());
        tracker.spawn(async move {
            let _permit = permit;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(head_timeout);
            let mut conn = pin!(builder.serve_connection(TokioIo::new(stream), service).with_upgrades());
            let result = tokio::select! {
                result = conn.as_mut() => result,
                () = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = result {
                if e.is_timeout() && !served.load(Ordering::Relaxed) {
                    Refusal::HeadTimeout.count(&refused);
                }
                debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    stop.cancel();
    tracker.close();
    tracker.wait().await;
    Ok(())
}
