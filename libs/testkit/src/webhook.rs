//! A webhook receiver on loopback: a real HTTP/1.1 server that records every request
//! (method, path, headers, body) and answers as the test says — a status, or never (a hung
//! receiver) — after an optional delay, counting how many requests it serves at once; and
//! that can go down (every connection closed) and come back on the same port.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};

/// How the receiver answers the requests that come from now on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    Status(u16),
    /// Never: the request hangs until its sender gives up.
    Hang,
}

/// One request the receiver got, and how it answered (`None` for a hung one).
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub answer: Option<u16>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Whether it was answered with a 2xx.
    pub fn acknowledged(&self) -> bool {
        self.answer.is_some_and(|s| (200..300).contains(&s))
    }
}

struct Shared {
    answer: Mutex<Answer>,
    delay: Mutex<Duration>,
    received: Mutex<Vec<Received>>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

/// A running receiver; stops when dropped.
pub struct WebhookReceiver {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WebhookReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Counts a request in flight until dropped (a hung request's handler is dropped when its
/// sender goes away).
struct InFlight(Arc<Shared>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    shared.most_in_flight.fetch_max(now, Ordering::SeqCst);
    let _guard = InFlight(shared.clone());
    let delay = *shared.delay.lock().unwrap();
    tokio::time::sleep(delay).await;
    let answer = *shared.answer.lock().unwrap();
    let headers = headers
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let status = match answer {
        Answer::Status(status) => Some(status),
        Answer::Hang => None,
    };
    shared.received.lock().unwrap().push(Received {
        method: method.to_string(),
        path: uri.path().to_owned(),
        headers,
        body: body.to_vec(),
        answer: status,
    });
    match status {
        Some(status) => StatusCode::from_u16(status).expect("a valid status"),
        None => std::future::pending().await,
    }
}

impl WebhookReceiver {
    /// A receiver on a free loopback port, answering 204.
    pub async fn start() -> WebhookReceiver {
        WebhookReceiver::start_at("127.0.0.1:0".parse().unwrap()).await
    }

    /// A receiver on `addr` (a port a stopped receiver had: it comes back), answering 204.
    pub async fn start_at(addr: SocketAddr) -> WebhookReceiver {
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap_or_else(|e| panic!("bind {addr}: {e}"));
        let addr = listener.local_addr().expect("the receiver's address");
        let shared = Arc::new(Shared {
            answer: Mutex::new(Answer::Status(204)),
            delay: Mutex::new(Duration::ZERO),
            received: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            most_in_flight: AtomicUsize::new(0),
        });
        let app = axum::Router::new().fallback(handle).with_state(shared.clone());
        // Connections are tasks of the server's own JoinSet, so stopping it closes them all
        // (axum::serve would leave kept-alive connections serving).
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                let service = hyper_util::service::TowerToHyperService::new(app.clone());
                connections.spawn(async move {
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
                while connections.try_join_next().is_some() {}
            }
        });
        WebhookReceiver { addr, shared, task }
    }

    /// `http://<addr><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Answers the requests that come from now on with `answer`.
    pub fn answer(&self, answer: Answer) {
        *self.shared.answer.lock().unwrap() = answer;
    }

    /// Waits `delay` before answering each request from now on.
    pub fn delay(&self, delay: Duration) {
        *self.shared.delay.lock().unwrap() = delay;
    }

    /// Every request so far, in the order they were answered (or hung).
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// The most requests it served at once.
    pub fn most_in_flight(&self) -> usize {
        self.shared.most_in_flight.load(Ordering::SeqCst)
    }

    /// Waits until `done` holds for the requests received (panics after `timeout`, showing
    /// them).
    pub async fn wait_until(&self, timeout: Duration, what: &str, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + timeout;
        loop {
            let received = self.received();
            if done(&received) {
                return received;
            }
            assert!(Instant::now() < deadline, "{what}: not within {timeout:?}; received {received:#?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops serving: open connections are closed and new ones refused. Its address, to
    /// start again at.
    pub async fn stop(self) -> SocketAddr {
        self.task.abort();
        let addr = self.addr;
        // Wait until the listener and the connections are gone.
        while !self.task.is_finished() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        addr
    }
}
