//! One command is one trace across the cluster. The processes export their spans over OTLP
//! to a receiver in this test:
//!
//! - a command the test submits to a router with its own `traceparent` shows up as the
//!   router's `router.forward` span (a child of the test's context) and the node's
//!   `node.call` span (a child of `router.forward`), in one trace;
//! - a command a WebSocket client sends to a gateway is one trace from the gateway's
//!   `gateway.command` through its forward to the owning node (`router.forward`, on the
//!   gateway: no router in between) and the node's actor and commit
//!   (`match.command`, `store.commit`, linked with its group commit's `store.batch`) to every
//!   gateway's `gateway.deliver` of the revision it produced, which continues the commit's
//!   context carried by the outbox row and the Redis stream entry.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value;

use crate::client::{Client, uuid};
use crate::harness::*;
use juegoland_testkit::TestSchema;

/// One span as the receiver got it.
#[derive(Clone, Debug)]
struct Received {
    service: String,
    name: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    attributes: BTreeMap<String, String>,
    /// The spans it links to: (trace id, span id).
    links: Vec<(String, String)>,
}

/// A minimal OTLP trace collector: keeps every span it is sent.
#[derive(Clone, Default)]
struct Receiver {
    spans: Arc<Mutex<Vec<Received>>>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn string_attributes(attributes: &[KeyValue]) -> BTreeMap<String, String> {
    attributes
        .iter()
        .filter_map(|kv| match kv.value.as_ref()?.value.as_ref()? {
            Value::StringValue(s) => Some((kv.key.clone(), s.clone())),
            Value::IntValue(n) => Some((kv.key.clone(), n.to_string())),
            other => Some((kv.key.clone(), format!("{other:?}"))),
        })
        .collect()
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut received = Vec::new();
        for resource_spans in request.into_inner().resource_spans {
            let resource = resource_spans.resource.map(|r| string_attributes(&r.attributes)).unwrap_or_default();
            let service = resource.get("service.name").cloned().unwrap_or_default();
            for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
                received.push(Received {
                    service: service.clone(),
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    attributes: string_attributes(&span.attributes),
                    links: span.links.iter().map(|l| (hex(&l.trace_id), hex(&l.span_id))).collect(),
                });
            }
        }
        self.spans.lock().expect("the receiver's lock").extend(received);
        Ok(tonic::Response::new(ExportTraceServiceResponse { partial_success: None }))
    }
}

impl Receiver {
    /// Starts a receiver on a free port; its endpoint URL and its server task.
    async fn start() -> (Receiver, String, tokio::task::JoinHandle<Result<(), tonic::transport::Error>>) {
        let receiver = Receiver::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the OTLP receiver");
        let endpoint = format!("http://{}", listener.local_addr().expect("the receiver's address"));
        let server = tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(receiver.clone()))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
        (receiver, endpoint, server)
    }

    /// The spans of `trace_id` received so far.
    fn trace(&self, trace_id: &str) -> Vec<Received> {
        self.spans.lock().expect("the receiver's lock").iter().filter(|s| s.trace_id == trace_id).cloned().collect()
    }

    /// Every span received so far.
    fn all(&self) -> Vec<Received> {
        self.spans.lock().expect("the receiver's lock").clone()
    }
}

/// The environment that makes a process export its spans to `endpoint` every 200 ms.
fn exporting_to(endpoint: &str) -> Vec<(&str, &str)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        // Neither the test's own environment nor a default may rename the services or
        // filter the spans away.
        ("OTEL_SERVICE_NAME", ""),
        ("OTEL_RESOURCE_ATTRIBUTES", ""),
        ("OTEL_TRACES_SAMPLER", "parentbased_always_on"),
        ("JUEGOLAND_TRACE_FILTER", "info"),
    ]
}

fn find<'a>(spans: &'a [Received], service: &str, name: &str, op: &str) -> Option<&'a Received> {
    spans
        .iter()
        .find(|s| s.service == service && s.name == name && s.attributes.get("op").map(String::as_str) == Some(op))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_command_is_one_trace_across_router_and_node() {
    let (receiver, endpoint, server) = Receiver::start().await;
    let cluster = Cluster::start_with_env("tracing", 1, 1, &exporting_to(&endpoint)).await;
    let mut client = cluster.client(0).await;
    let match_id = create(&mut client).await;

    // The caller's context, chosen here so the trace id is known.
    let trace_id = format!("{:032x}", rand_u128());
    let caller_span_id = format!("{:016x}", rand_u128() as u64 | 1);
    let envelope = drop_at(match_id, 0, 3);
    let mut request = tonic::Request::new(juegoland_rpc::request_to_pb(&command("alice", &envelope)));
    let traceparent = format!("00-{trace_id}-{caller_span_id}-01");
    request.metadata_mut().insert("traceparent", traceparent.parse().expect("an ASCII traceparent"));
    let answer = message(answer(client.call(request).await).expect("the router answers"));
    assert_eq!(applied_revision(&answer), Some(1), "the command applied: {answer:?}");

    // Both processes export in batches every 200 ms; wait for both halves of the trace.
    let deadline = Instant::now() + Duration::from_secs(10);
    let spans = loop {
        let spans = receiver.trace(&trace_id);
        let router = find(&spans, "juegoland-router", "router.forward", "submit_command");
        let node = find(&spans, "juegoland-node", "node.call", "submit_command");
        if router.is_some() && node.is_some() {
            break spans;
        }
        assert!(
            Instant::now() < deadline,
            "no router.forward and node.call spans of trace {trace_id} within 10 s; got {spans:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let router = find(&spans, "juegoland-router", "router.forward", "submit_command").expect("the router's span");
    let node = find(&spans, "juegoland-node", "node.call", "submit_command").expect("the node's span");

    assert_eq!(router.parent_span_id, caller_span_id, "router.forward continues the caller's context");
    assert_eq!(node.parent_span_id, router.span_id, "node.call is a child of router.forward");
    assert_eq!(node.attributes.get("match_id"), Some(&match_id.to_string()), "{node:?}");
    assert_eq!(router.attributes.get("match_id"), Some(&match_id.to_string()), "{router:?}");
    for span in &spans {
        assert!(
            ["juegoland-router", "juegoland-node"].contains(&span.service.as_str()),
            "a span of the trace from an unexpected service: {span:?}"
        );
    }
    println!(
        "trace {trace_id}: caller {caller_span_id} -> router.forward {} -> node.call {} ({} spans: {:?})",
        router.span_id,
        node.span_id,
        spans.len(),
        spans.iter().map(|s| format!("{}:{}", s.service, s.name)).collect::<Vec<_>>()
    );

    drop(client);
    cluster.stop().await;
    server.abort();
}

/// A node and a router on a private PostgreSQL schema, publishing on the shared Redis, and a
/// gateway reading it, every process with `env`; clients' tokens are signed by `secret`.
async fn traced_cluster(test: &str, secret: &str, env: &[(&str, &str)]) -> (Cluster, Proc) {
    let schema = TestSchema::create("cluster", test).await;
    let url = schema.url();
    let redis = Cluster::shared_redis();
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    let mut node = node_args(&url, 0);
    node.extend(["--redis-url".to_owned(), redis.clone()]);
    let nodes = vec![Proc::spawn_with_env(node, env.clone())];
    let routers = vec![Proc::spawn_with_env(router_args(&url), env.clone())];
    let gateway_args = ["gateway", "--http", "127.0.0.1:0", "--database-url", &url, "--redis-url", &redis];
    let mut gateway_args: Vec<String> = gateway_args.map(str::to_owned).to_vec();
    gateway_args.extend(["--jwt-secret".to_owned(), secret.to_owned()]);
    let gateway = Proc::spawn_with_env(gateway_args, env);
    let cluster = Cluster { schema, nodes, routers, restarts: 0 };
    cluster.wait_for_ring().await;
    (cluster, gateway)
}

/// The one span of `trace` from `service` named `name` (and, for `Some(op)`, of that `op`).
#[track_caller]
fn one<'a>(trace: &'a [Received], service: &str, name: &str, op: Option<&str>) -> &'a Received {
    let found: Vec<&Received> = trace
        .iter()
        .filter(|s| s.service == service && s.name == name)
        .filter(|s| op.is_none_or(|op| s.attributes.get("op").map(String::as_str) == Some(op)))
        .collect();
    assert_eq!(found.len(), 1, "one {service} {name} span in the trace; got {found:#?}");
    found[0]
}

fn names(spans: &[Received]) -> Vec<String> {
    spans.iter().map(|s| format!("{}:{}", s.service, s.name)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_command_is_one_trace_from_the_gateway_to_every_delivery() {
    let (receiver, endpoint, server) = Receiver::start().await;
    let secret = "tracing-test-secret-0123456789abcdef0123456789";
    let (cluster, gateway) = traced_cluster("tracing_gateway", secret, &exporting_to(&endpoint)).await;
    let tokens = juegoland_edge::Tokens::new(secret.as_bytes(), 600).expect("tokens");
    let m = create(&mut cluster.client(0).await).await.to_string();
    let addr = gateway.http.trim_start_matches("http://").to_owned();
    let mut alice = Client::connect_to(&addr, &tokens.issue("alice").expect("a token")).await;
    let mut bob = Client::connect_to(&addr, &tokens.issue("bob").expect("a token")).await;
    assert_eq!(alice.sync(&m, "r-a").await["revision"], 0);
    assert_eq!(bob.sync(&m, "r-b").await["revision"], 0);

    // Alice's command over her WebSocket; both subscriptions get its revision from the stream.
    let command_id = uuid();
    alice.drop_disc(&m, &command_id, 0, 3).await;
    let (ack, _) = alice.recv_type("game.ack").await;
    assert_eq!((ack["status"].as_str(), ack["revision"].as_u64()), (Some("applied"), Some(1)), "{ack}");
    for who in [&mut alice, &mut bob] {
        assert_eq!(who.recv_revision(1).await["fromRevision"], 0);
    }

    // The gateway's span of the command names the trace; wait for every part of it (each
    // process exports every 200 ms).
    let deadline = Instant::now() + Duration::from_secs(15);
    let (trace_id, trace) = loop {
        let root = receiver.all().into_iter().find(|s| {
            s.name == "gateway.command" && s.attributes.get("command_id").map(String::as_str) == Some(&command_id)
        });
        if let Some(root) = root {
            let trace = receiver.trace(&root.trace_id);
            let has = |name: &str| trace.iter().any(|s| s.name == name);
            let deliveries = trace.iter().filter(|s| s.name == "gateway.deliver").count();
            if ["router.forward", "node.call", "match.command", "store.commit", "bus.publish"].iter().all(|n| has(n))
                && deliveries == 2
            {
                break (root.trace_id, trace);
            }
        }
        assert!(
            Instant::now() < deadline,
            "the trace of command {command_id} is incomplete after 15 s; received {:?}",
            names(&receiver.all())
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };

    let command = one(&trace, "juegoland-gateway", "gateway.command", None);
    // The gateway forwards to the owning node itself: its own `router.forward` span.
    let forward = one(&trace, "juegoland-gateway", "router.forward", Some("submit_command"));
    let call = one(&trace, "juegoland-node", "node.call", Some("submit_command"));
    let actor = one(&trace, "juegoland-node", "match.command", None);
    let commit = one(&trace, "juegoland-node", "store.commit", None);
    let publish = one(&trace, "juegoland-node", "bus.publish", None);
    assert_eq!(command.parent_span_id, "", "the gateway starts the trace: {command:?}");
    assert_eq!(forward.parent_span_id, command.span_id, "router.forward continues gateway.command");
    assert_eq!(call.parent_span_id, forward.span_id, "node.call continues router.forward");
    assert_eq!(actor.parent_span_id, call.span_id, "match.command is a child of node.call");
    assert_eq!(commit.parent_span_id, actor.span_id, "store.commit is a child of match.command");
    assert_eq!(publish.parent_span_id, actor.span_id, "bus.publish is a child of match.command");
    let mut seats = BTreeSet::new();
    for deliver in trace.iter().filter(|s| s.name == "gateway.deliver") {
        assert_eq!(deliver.service, "juegoland-gateway");
        assert_eq!(deliver.parent_span_id, commit.span_id, "a delivery continues the commit: {deliver:?}");
        assert_eq!(deliver.attributes.get("revision").map(String::as_str), Some("1"), "{deliver:?}");
        assert_eq!(deliver.attributes.get("match_id"), Some(&m));
        seats.insert(deliver.attributes.get("seat").cloned().unwrap_or_default());
    }
    assert_eq!(seats, BTreeSet::from(["p0".to_owned(), "p1".to_owned()]), "both players' deliveries");
    for span in [command, forward, call, actor] {
        assert_eq!(span.attributes.get("command_id"), Some(&command_id), "{span:?}");
        assert_eq!(span.attributes.get("match_id"), Some(&m), "{span:?}");
    }
    assert_eq!(actor.attributes.get("outcome").map(String::as_str), Some("applied"), "{actor:?}");
    assert_eq!(actor.attributes.get("revision").map(String::as_str), Some("1"), "{actor:?}");
    assert_eq!(command.attributes.get("outcome").map(String::as_str), Some("applied"), "{command:?}");
    assert_eq!(commit.attributes.get("revision").map(String::as_str), Some("1"), "{commit:?}");
    for span in &trace {
        assert!(
            ["juegoland-gateway", "juegoland-router", "juegoland-node"].contains(&span.service.as_str()),
            "a span of the trace from an unexpected service: {span:?}"
        );
        assert_eq!(span.trace_id, trace_id);
    }

    // The group commit that carried the commit is a span of its own, linked both ways.
    let batch = loop {
        let batch = receiver
            .all()
            .into_iter()
            .find(|s| s.name == "store.batch" && s.links.iter().any(|(t, s)| *t == trace_id && *s == commit.span_id));
        if let Some(batch) = batch {
            break batch;
        }
        assert!(Instant::now() < deadline, "no store.batch span links to store.commit {}", commit.span_id);
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(batch.service, "juegoland-node");
    assert_eq!(batch.attributes.get("outcome").map(String::as_str), Some("committed"), "{batch:?}");
    assert!(commit.links.contains(&(batch.trace_id.clone(), batch.span_id.clone())), "{commit:?} links {batch:?}");
    let shared: u64 = commit.attributes.get("store.batch.commits").and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(shared >= 1, "the commit knows how many shared its transaction: {commit:?}");
    println!("trace {trace_id}: {:?}; group commit {} ({shared} commits)", names(&trace), batch.span_id);

    drop((alice, bob, gateway));
    cluster.stop().await;
    server.abort();
}
