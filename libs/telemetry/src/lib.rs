//! Telemetry for every process: the global `tracing` subscriber (the log lines) and the
//! OpenTelemetry spans behind it, exported over OTLP when configured, and the W3C trace
//! context carried in gRPC metadata, so one command is one trace across router and node.
//!
//! Owns: [`init`] (the subscriber, the tracer provider, the global W3C TraceContext
//! propagator) and the metadata border of the trace context ([`inject`], [`extract`],
//! [`set_parent`]). Must not use: any other workspace crate (everything may use this one),
//! or the HTTP exporters of `opentelemetry-otlp` (they pull reqwest): spans leave over gRPC.
//!
//! # Configuration (environment)
//!
//! - `RUST_LOG`: the log lines' filter, `info` by default.
//! - `JUEGOLAND_TRACE_FILTER`: which spans become OpenTelemetry spans, `info` by default. It is
//!   separate from `RUST_LOG`, so quieting the logs does not cut the traces.
//! - `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): the collector's
//!   gRPC address; without it spans still get ids and propagate, but nothing leaves the process.
//! - `OTEL_SERVICE_NAME`: overrides the service name given to [`init`].
//! - `OTEL_BSP_SCHEDULE_DELAY` and the other standard batch-processor variables: how spans
//!   are batched on their way out.

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tonic::metadata::{KeyRef, MetadataKey, MetadataMap, MetadataValue};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// An OpenTelemetry context: the parent a span continues (see [`extract`]).
pub use opentelemetry::Context;

/// Keeps the tracer provider alive; dropping it exports the spans still queued and shuts the
/// provider down. Hold it for the life of the process.
#[must_use = "dropping the guard shuts the tracer provider down"]
pub struct Guard {
    /// The provider behind the installed subscriber; `None` when another call installed it.
    provider: Option<SdkTracerProvider>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Shutting down flushes the batch; an error means spans were lost on the way out,
        // and there is nobody left to tell but stderr.
        if let Some(Err(e)) = self.provider.as_ref().map(SdkTracerProvider::shutdown) {
            eprintln!("telemetry: shut the tracer provider down: {e}");
        }
    }
}

/// Whether [`init`] installed its subscriber (in this process, once).
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Whether an OTLP endpoint is configured in the environment.
fn otlp_configured() -> bool {
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        .iter()
        .any(|var| std::env::var(var).is_ok_and(|v| !v.trim().is_empty()))
}

/// Installs the global subscriber: log lines filtered by `RUST_LOG` (default `info`) plus an
/// OpenTelemetry layer over an SDK tracer provider whose resource names `service_name`
/// (`OTEL_SERVICE_NAME` wins when set), and sets the W3C TraceContext propagator globally.
/// Spans are exported in batches over OTLP/gRPC when `OTEL_EXPORTER_OTLP_ENDPOINT` is set;
/// the exporter needs a Tokio runtime, so call this inside one (without a runtime, nothing
/// is exported).
///
/// Calling it again (tests) does not panic: the first subscriber stays installed, and the
/// later calls return guards that own nothing.
pub fn init(service_name: &str) -> Guard {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    if INSTALLED.load(Ordering::Acquire) {
        return Guard { provider: None };
    }

    let service_name = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| service_name.to_owned());
    let resource = Resource::builder().with_service_name(service_name.clone()).build();
    let mut builder = SdkTracerProvider::builder().with_resource(resource);
    let mut problem = None;
    if otlp_configured() {
        if tokio::runtime::Handle::try_current().is_err() {
            problem = Some("no Tokio runtime to run the OTLP exporter on: spans are not exported".to_owned());
        } else {
            match opentelemetry_otlp::SpanExporter::builder().with_tonic().build() {
                Ok(exporter) => builder = builder.with_batch_exporter(exporter),
                Err(e) => problem = Some(format!("build the OTLP span exporter: {e}; spans are not exported")),
            }
        }
    }
    let provider = builder.build();

    let log_filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let trace_filter = EnvFilter::try_from_env("JUEGOLAND_TRACE_FILTER").unwrap_or_else(|_| EnvFilter::new("info"));
    let installed = tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_filter(log_filter))
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer(service_name)).with_filter(trace_filter))
        .try_init()
        .is_ok();
    if let Some(problem) = problem {
        tracing::warn!("{problem}");
    }
    if !installed {
        // Another call won the race to install its subscriber; this provider serves nobody.
        let _ = provider.shutdown();
        return Guard { provider: None };
    }
    INSTALLED.store(true, Ordering::Release);
    Guard { provider: Some(provider) }
}

/// Writes the current `tracing` span's OpenTelemetry context (`traceparent`, `tracestate`)
/// into outgoing gRPC metadata. Without a current span (or before [`init`]) nothing is written.
pub fn inject(metadata: &mut MetadataMap) {
    let cx = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut MetadataInjector(metadata)));
}

/// Reads the caller's OpenTelemetry context from incoming gRPC metadata; without a valid
/// `traceparent` the context carries no span.
pub fn extract(metadata: &MetadataMap) -> Context {
    opentelemetry::global::get_text_map_propagator(|p| p.extract(&MetadataExtractor(metadata)))
}

/// Makes `cx` (usually from [`extract`]) the parent of `span`, which must not have been
/// entered yet. A context without a valid span (the caller sent no trace context) leaves the
/// span's parent as it was.
pub fn set_parent(span: &tracing::Span, cx: Context) {
    if !cx.span().span_context().is_valid() {
        return;
    }
    // The only failures are a span disabled by the filters, no OpenTelemetry layer
    // installed, or a span already started: each leaves the span where it was.
    if let Err(e) = span.set_parent(cx) {
        tracing::debug!(error = %e, "span keeps its parent");
    }
}

struct MetadataInjector<'a>(&'a mut MetadataMap);

impl Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        // The propagator writes lowercase ASCII names and visible-ASCII values; anything else
        // cannot travel as gRPC metadata and is dropped.
        if let (Ok(key), Ok(value)) = (MetadataKey::from_bytes(key.as_bytes()), MetadataValue::try_from(&value)) {
            self.0.insert(key, value);
        }
    }
}

struct MetadataExtractor<'a>(&'a MetadataMap);

impl Extractor for MetadataExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0
            .keys()
            .filter_map(|k| match k {
                KeyRef::Ascii(k) => Some(k.as_str()),
                KeyRef::Binary(_) => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
    use std::sync::OnceLock;

    /// Installs the subscriber once for every test of this process (`cargo test` runs them
    /// in one process, nextest one per process); its guard lives as long as the process.
    fn setup() {
        static GUARD: OnceLock<Guard> = OnceLock::new();
        GUARD.get_or_init(|| {
            let guard = init("juegoland-telemetry-test");
            // A second call must not panic, and its guard must not stop the first one's spans.
            drop(init("juegoland-telemetry-test"));
            guard
        });
    }

    #[test]
    fn inject_then_extract_keeps_the_trace_id() {
        setup();

        let trace_id = TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").expect("trace id");
        let parent_id = SpanId::from_hex("00f067aa0ba902b7").expect("span id");
        let remote = SpanContext::new(trace_id, parent_id, TraceFlags::SAMPLED, true, TraceState::default());
        let span = tracing::info_span!("test.call");
        set_parent(&span, Context::new().with_remote_span_context(remote));

        let mut metadata = MetadataMap::new();
        span.in_scope(|| inject(&mut metadata));
        let traceparent = metadata.get("traceparent").expect("a traceparent was written").to_str().expect("ascii");
        assert!(traceparent.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"), "{traceparent}");

        let cx = extract(&metadata);
        let got = cx.span().span_context().clone();
        assert!(got.is_remote() && got.is_valid());
        assert_eq!(got.trace_id(), trace_id);
        // What travels is the child span's id, not the parent's.
        assert_ne!(got.span_id(), parent_id);
        assert_eq!(got.span_id(), span.context().span().span_context().span_id());
    }

    #[test]
    fn metadata_without_a_traceparent_gives_no_parent() {
        setup();
        let cx = extract(&MetadataMap::new());
        assert!(!cx.span().span_context().is_valid());
    }
}
