//! One command is one trace across the cluster: a router and a node export their spans over
//! OTLP to a receiver in this test, and the command the test submits with its own
//! `traceparent` shows up as the router's `router.forward` span (a child of the test's
//! context) and the node's `node.call` span (a child of `router.forward`), in one trace.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use juegoland_rpc::pb;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value;

use crate::harness::*;

/// One span as the receiver got it.
#[derive(Clone, Debug)]
struct Received {
    service: String,
    name: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    attributes: BTreeMap<String, String>,
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
                });
            }
        }
        self.spans.lock().expect("the receiver's lock").extend(received);
        Ok(tonic::Response::new(ExportTraceServiceResponse { partial_success: None }))
    }
}

impl Receiver {
    /// The spans of `trace_id` received so far.
    fn trace(&self, trace_id: &str) -> Vec<Received> {
        self.spans.lock().expect("the receiver's lock").iter().filter(|s| s.trace_id == trace_id).cloned().collect()
    }
}

fn find<'a>(spans: &'a [Received], service: &str, name: &str, op: &str) -> Option<&'a Received> {
    spans
        .iter()
        .find(|s| s.service == service && s.name == name && s.attributes.get("op").map(String::as_str) == Some(op))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_command_is_one_trace_across_router_and_node() {
    let receiver = Receiver::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the OTLP receiver");
    let endpoint = format!("http://{}", listener.local_addr().expect("the receiver's address"));
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(receiver.clone()))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );

    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        // Neither the test's own environment nor a default may rename the services or
        // filter the spans away.
        ("OTEL_SERVICE_NAME", ""),
        ("JUEGOLAND_TRACE_FILTER", "info"),
    ];
    let cluster = Cluster::start_with_env("tracing", 1, 1, &env).await;
    let mut client = cluster.client(0).await;
    let match_id = create(&mut client).await;

    // The caller's context, chosen here so the trace id is known.
    let trace_id = format!("{:032x}", rand_u128());
    let caller_span_id = format!("{:016x}", rand_u128() as u64 | 1);
    let envelope = drop_at(match_id, 0, 3);
    let mut request = tonic::Request::new(pb::SubmitCommandRequest {
        principal: "alice".into(),
        envelope_json: juegoland_rpc::envelope_to_json(&envelope),
    });
    let traceparent = format!("00-{trace_id}-{caller_span_id}-01");
    request.metadata_mut().insert("traceparent", traceparent.parse().expect("an ASCII traceparent"));
    let reply = client.submit_command(request).await.expect("the router answers").into_inner();
    let answer = juegoland_rpc::server_message(&reply.message_json).expect("a server message");
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
