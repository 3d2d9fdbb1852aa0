//! Telemetry for every process: the global `tracing` subscriber (the log lines, as text or as
//! JSON) and the OpenTelemetry spans behind it, exported over OTLP when configured, and the W3C
//! trace context carried across processes — in gRPC metadata between gateway, router and node,
//! and as text in outbox rows and stream entries from a node's commit to a gateway's delivery —
//! so one command is one trace from the client's gateway back to the clients.
//!
//! Owns: [`init`] / [`init_with`] (the subscriber, the tracer provider, the global W3C
//! TraceContext propagator), the JSON log line format ([`LogFormat::Json`]), and every border
//! of the trace context: gRPC metadata ([`inject`], [`extract`], [`set_parent`]) and text
//! ([`trace_context`], [`set_parent_from_text`]). Must not use: any other workspace crate
//! (everything may use this one), or the HTTP exporters of `opentelemetry-otlp` (they pull
//! reqwest): spans leave over gRPC.
//!
//! # Configuration (environment)
//!
//! Logs:
//! - `RUST_LOG`: the log lines' filter, `info` by default. Spans of this workspace at `info`
//!   stay visible to the log lines whatever the filter, so a `warn` line still carries the
//!   match and command it happened in — except, in a process that keeps no traces and logs
//!   nothing below `info`, spans with the target [`TRACE_ONLY`] (the spans of every move),
//!   which it does not create at all: the warnings and errors of a move name their match and
//!   command themselves. The crates that log whole messages below `info` (rmcp's MCP
//!   requests and results, socketioxide's and engineioxide's packets) are capped at `info`
//!   whatever it says, so no projection, payload or token reaches a line through them.
//! - `JUEGOLAND_LOG_FORMAT`: `text` (human lines) or `json` (one JSON object per line: time,
//!   level, target, message, the event's fields, the fields of every enclosing span — match
//!   id, command id, revision where known — the innermost span's name, and `trace_id` /
//!   `span_id` of the current trace). The default is the caller's ([`init_with`]): JSON for
//!   the deployed service binaries, text for `juegoland`.
//!
//! Traces (the standard OpenTelemetry variables; the SDK and the OTLP exporter read most of
//! them themselves):
//! - `OTEL_SDK_DISABLED=true`: no OpenTelemetry at all (no span ids, nothing propagated or
//!   exported); log lines then carry no trace ids.
//! - `OTEL_TRACES_EXPORTER`: `otlp` exports (to `OTEL_EXPORTER_OTLP_*`, or the OTLP default
//!   `http://localhost:4317`), `none` does not. Unset, spans are exported only when
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, so a
//!   developer's process does not try to reach a collector that is not there.
//! - `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
//!   `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT` (and their `_TRACES_` forms):
//!   the collector's gRPC address, headers and timeout, read by the OTLP exporter.
//! - `OTEL_SERVICE_NAME`, else `service.name` in `OTEL_RESOURCE_ATTRIBUTES`, else the name
//!   given to [`init`]: the service name. `OTEL_RESOURCE_ATTRIBUTES`: further resource
//!   attributes (`deployment.environment=prod,k8s.pod.name=…`).
//! - `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`: the sampler (`parentbased_always_on` by
//!   default; `parentbased_traceidratio` with a ratio for busy deployments). Unset in a process
//!   that exports nothing, traces it starts itself are not sampled (their spans still have ids
//!   for the log lines, but record nothing), while a caller's trace follows the caller's flag.
//! - `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`,
//!   `OTEL_BSP_EXPORT_TIMEOUT`: how spans are batched on their way out;
//!   `OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT` and the other span limits.
//! - `JUEGOLAND_TRACE_FILTER`: which spans become OpenTelemetry spans, `info` by default. It is
//!   separate from `RUST_LOG`, so quieting the logs does not cut the traces.
//!
//! # When a trace context leaves the process
//!
//! Only when the trace is exported somewhere: this process exports spans, or the trace came
//! from another process (a caller's `traceparent`, or the text stored with a commit). A
//! process without an exporter that starts a trace itself (the all-in-one serving a client
//! with no collector configured) sends nothing: [`inject`] writes no metadata and
//! [`trace_context`] returns `None`, so the hot path formats no strings and stores no text.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry::{Key, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider};
use serde_json::{Map, Value};
use tonic::metadata::{KeyRef, MetadataKey, MetadataMap, MetadataValue};
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::subscriber::Interest;
use tracing::{Event, Level, Subscriber, span};
use tracing_opentelemetry::{OpenTelemetryLayer, OpenTelemetrySpanExt};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::layer::{self, Filter, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
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

/// How log lines are written to stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Human lines (`tracing-subscriber`'s default format).
    Text,
    /// One JSON object per line, with the fields of the enclosing spans and the trace ids
    /// (see the crate docs).
    Json,
}

impl LogFormat {
    /// `JUEGOLAND_LOG_FORMAT` if it names a format, else `default`.
    fn from_env(default: LogFormat) -> (LogFormat, Option<String>) {
        match std::env::var("JUEGOLAND_LOG_FORMAT").map(|v| v.trim().to_ascii_lowercase()) {
            Ok(v) if v == "json" => (LogFormat::Json, None),
            Ok(v) if v == "text" => (LogFormat::Text, None),
            Ok(v) if v.is_empty() => (default, None),
            Ok(v) => {
                (default, Some(format!("JUEGOLAND_LOG_FORMAT={v:?} is neither `text` nor `json`; using {default:?}")))
            }
            Err(_) => (default, None),
        }
    }
}

/// Whether [`init`] installed its subscriber (in this process, once).
/// The target of a span made for the traces and for detailed logs: a process without the
/// OpenTelemetry layer that logs at `info` or above (`juegoland dev` by default) does not
/// create it at all, so it costs a callsite check instead of a span's bookkeeping. For the
/// spans of every move (`gateway.command`, `match.command`, `store.commit`, `bus.publish`):
/// the warnings and errors inside them name their match and command themselves.
pub const TRACE_ONLY: &str = "juegoland::trace";

static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Whether the installed subscriber has an OpenTelemetry layer (not `OTEL_SDK_DISABLED`).
static OTEL_LAYER: AtomicBool = AtomicBool::new(false);
/// Whether this process exports its spans: then every trace context it has is worth sending
/// on, even one it started itself.
static EXPORTING: AtomicBool = AtomicBool::new(false);

/// Marks, in an OpenTelemetry [`Context`], a trace continued from another process. The
/// OpenTelemetry layer builds a child's context from its parent's, so every span below the
/// one [`set_parent`] gave a remote parent carries the mark.
#[derive(Clone, Copy, Debug)]
struct Continued;

fn env_true(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

fn env_set(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| !v.trim().is_empty())
}

/// Whether spans are to be exported: `OTEL_TRACES_EXPORTER`, else whether an OTLP endpoint is
/// configured; the second value is a problem worth a warning.
fn exporter_wanted() -> (bool, Option<String>) {
    match std::env::var("OTEL_TRACES_EXPORTER").map(|v| v.trim().to_ascii_lowercase()) {
        Ok(v) if v == "otlp" => (true, None),
        Ok(v) if v == "none" => (false, None),
        Ok(v) if !v.is_empty() => (
            false,
            Some(format!(
                "OTEL_TRACES_EXPORTER={v:?} is not supported (only `otlp` and `none`); spans are not exported"
            )),
        ),
        _ => (env_set("OTEL_EXPORTER_OTLP_ENDPOINT") || env_set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), None),
    }
}

/// The resource: the SDK's detectors (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), with
/// `service_name` when neither names the service.
fn resource(service_name: &str) -> Resource {
    let detected = Resource::builder().build();
    let named =
        detected.get(&Key::new("service.name")).is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    if named {
        detected
    } else {
        Resource::builder().with_attributes([KeyValue::new("service.name", service_name.to_owned())]).build()
    }
}

/// [`init_with`] with human log lines by default.
pub fn init(service_name: &str) -> Guard {
    init_with(service_name, LogFormat::Text)
}

/// Installs the global subscriber: log lines on stderr filtered by `RUST_LOG` (default `info`)
/// in `JUEGOLAND_LOG_FORMAT` (else `default_format`), plus — when this process exports spans
/// or writes JSON lines (whose `trace_id` needs it) — an OpenTelemetry layer over an SDK
/// tracer provider whose resource names the service (`service_name` unless
/// `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` does), and sets the W3C TraceContext
/// propagator globally. Spans are exported in batches over OTLP/gRPC as the crate docs
/// describe; the exporter needs a Tokio runtime, so call this inside one (without a runtime,
/// nothing is exported).
///
/// A process that neither exports nor writes JSON lines keeps no OpenTelemetry layer at all:
/// nobody would read its spans, and the layer's per-span bookkeeping cost about 10% of a busy
/// all-in-one's CPU and about 17% of a busy cluster's own processes (docs/benchmarks.md,
/// issues 18 and 19). Such a process does not continue a caller's trace either, so a
/// deployment that traces configures the exporter on every role (the Helm chart sets one
/// endpoint for all of them).
///
/// Calling it again (tests) does not panic: the first subscriber stays installed, and the
/// later calls return guards that own nothing.
pub fn init_with(service_name: &str, default_format: LogFormat) -> Guard {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    if INSTALLED.load(Ordering::Acquire) {
        return Guard { provider: None };
    }

    let mut problems = Vec::new();
    let (format, problem) = LogFormat::from_env(default_format);
    problems.extend(problem);
    let disabled = env_true("OTEL_SDK_DISABLED");
    let mut exporting = false;
    let (wanted, problem) = exporter_wanted();
    problems.extend(problem);
    let needed = !disabled && (wanted || format == LogFormat::Json);
    let provider = needed.then(|| {
        let resource = resource(service_name);
        let mut builder = SdkTracerProvider::builder().with_resource(resource);
        if !wanted && !env_set("OTEL_TRACES_SAMPLER") {
            builder = builder.with_sampler(unexported_sampler());
        }
        if wanted {
            if tokio::runtime::Handle::try_current().is_err() {
                problems.push("no Tokio runtime to run the OTLP exporter on: spans are not exported".to_owned());
            } else {
                match opentelemetry_otlp::SpanExporter::builder().with_tonic().build() {
                    Ok(exporter) => {
                        builder = builder.with_batch_exporter(exporter);
                        exporting = true;
                    }
                    Err(e) => problems.push(format!("build the OTLP span exporter: {e}; spans are not exported")),
                }
            }
        }
        builder.build()
    });

    let log_layer = log_layer(format, std::io::stderr, provider.is_some());
    let trace_filter = EnvFilter::try_from_env("JUEGOLAND_TRACE_FILTER").unwrap_or_else(|_| EnvFilter::new("info"));
    let otel_layer = provider
        .as_ref()
        .map(|provider| otel_layer(provider.tracer("juegoland"), format, exporting).with_filter(trace_filter));
    // Not `.with(Option<layer>)`: a `None` layer answers "always" for every callsite, which
    // next to the log layer's per-layer filter makes every span "sometimes" enabled, so the
    // registry would make (and enter, and close) the spans no layer wants.
    let installed = match otel_layer {
        Some(otel_layer) => tracing_subscriber::registry().with(log_layer).with(otel_layer).try_init().is_ok(),
        None => tracing_subscriber::registry().with(log_layer).try_init().is_ok(),
    };
    for problem in problems {
        tracing::warn!("{problem}");
    }
    if !installed {
        // Another call won the race to install its subscriber; this provider serves nobody.
        if let Some(provider) = provider {
            let _ = provider.shutdown();
        }
        return Guard { provider: None };
    }
    OTEL_LAYER.store(provider.is_some(), Ordering::Release);
    EXPORTING.store(exporting, Ordering::Release);
    INSTALLED.store(true, Ordering::Release);
    Guard { provider }
}

/// The sampler of a process that exports nothing (unless `OTEL_TRACES_SAMPLER` says otherwise):
/// a trace it starts itself needs ids (for the log lines) but no recorded data, so its spans
/// are not sampled and the SDK copies none of their attributes; a caller's trace follows the
/// caller's flag, so a sampled one is recorded and its context travels on as it came.
fn unexported_sampler() -> Sampler {
    Sampler::ParentBased(Box::new(Sampler::AlwaysOff))
}

/// The OpenTelemetry layer over `tracer`, for log lines in `format`, in a process that does or
/// does not export spans.
fn otel_layer<S>(tracer: SdkTracer, format: LogFormat, exporting: bool) -> OpenTelemetryLayer<S, SdkTracer>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    tracing_opentelemetry::layer()
        .with_tracer(tracer)
        // Busy and idle times, threads and source locations are attributes of exported spans;
        // measuring them for nobody cost a few percent of a busy all-in-one.
        .with_tracked_inactivity(exporting)
        .with_threads(exporting)
        .with_location(exporting)
        // Entering a span makes its context the current one, which only the JSON lines read
        // (their `trace_id`); a child span finds its parent through `tracing` either way.
        // Activation on every poll of every instrumented future cost 3% of the all-in-one's
        // CPU with text log lines, for nothing.
        .with_context_activation(format == LogFormat::Json)
}

/// The log lines on `writer` in `format`: `RUST_LOG`'s events (default `info`), and this
/// workspace's spans down to `info` whatever `RUST_LOG` says, so that every line names the
/// match and command it belongs to.
fn log_layer<S, W>(format: LogFormat, writer: W, traces: bool) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let events = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    log_layer_with(format, writer, traces, events)
}

/// [`log_layer`] with the lines' filter given (`RUST_LOG`'s in the product).
fn log_layer_with<S, W>(
    format: LogFormat,
    writer: W,
    traces: bool,
    events: EnvFilter,
) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    // Below `info`, lines come from inside a command's steps and want their context.
    let detailed = Filter::<S>::max_level_hint(&events).is_none_or(|level| level > LevelFilter::INFO);
    let filter = LogFilter { events, traces: traces || detailed };
    match format {
        // Colours only for a person at a terminal, not for a file or a log collector.
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .fmt_fields(JsonFields::new())
            .event_format(JsonLines)
            .with_filter(filter)
            .boxed(),
    }
}

/// The log lines' filter: `events` (from `RUST_LOG`) for everything but this workspace's spans
/// down to `info`, which it always enables (their fields give every line its context), and
/// the [`TRACE_ONLY`] spans, which it enables only when `traces`: with the OpenTelemetry layer
/// (which makes them anyway, and a line inside one then carries its trace ids) or when lines
/// below `info` are wanted. At `info` and above, the lines inside such a span (warnings and
/// errors of a command) name their match and command themselves.
///
/// A filter of its own rather than `events.or(filter_fn(…))`: a `FilterFn` has no callsite
/// interest of its own, which makes the combination's interest "sometimes" for every callsite,
/// and next to the OpenTelemetry layer's filter that lost spans to the traces at random (seen
/// with tracing-subscriber 0.3.23). Here every callsite keeps a fixed interest.
struct LogFilter {
    events: EnvFilter,
    traces: bool,
}

/// Crates whose lines below `info` write whole messages — rmcp logs every MCP request and
/// response (an agent's `play` arguments, its seat's projection in `get_view`); socketioxide
/// and engineioxide, with their `tracing` feature, every Socket.IO packet (handshake tokens,
/// commands, snapshots) — so their lines are capped at `info` whatever `RUST_LOG` asks: no
/// private hand, payload or token reaches a log line through them. Found by the
/// authorization matrix's scan of a `RUST_LOG=debug` run (`services/juegoland/tests/it/authz.rs`).
const PAYLOAD_LOGGERS: [&str; 3] = ["rmcp", "socketioxide", "engineioxide"];

impl LogFilter {
    /// A line (or span) below `info` of a crate that logs whole messages ([`PAYLOAD_LOGGERS`]).
    fn is_capped(meta: &tracing::Metadata<'_>) -> bool {
        *meta.level() > Level::INFO
            && PAYLOAD_LOGGERS
                .iter()
                .any(|c| meta.target().strip_prefix(c).is_some_and(|rest| rest.is_empty() || rest.starts_with("::")))
    }

    fn is_context_span(meta: &tracing::Metadata<'_>) -> bool {
        meta.is_span() && *meta.level() <= Level::INFO && meta.target().starts_with("juegoland")
    }

    /// A trace-only span, or another crate's (ractor's actor spans, entered at every poll),
    /// in a process that keeps no traces and logs nothing below `info`.
    fn is_hidden(&self, meta: &tracing::Metadata<'_>) -> bool {
        !self.traces && meta.is_span() && (meta.target() == TRACE_ONLY || !meta.target().starts_with("juegoland"))
    }
}

impl<S: Subscriber> Filter<S> for LogFilter {
    fn enabled(&self, meta: &tracing::Metadata<'_>, cx: &layer::Context<'_, S>) -> bool {
        !self.is_hidden(meta)
            && !Self::is_capped(meta)
            && (Self::is_context_span(meta) || Filter::enabled(&self.events, meta, cx))
    }

    fn callsite_enabled(&self, meta: &'static tracing::Metadata<'static>) -> Interest {
        if self.is_hidden(meta) || Self::is_capped(meta) {
            Interest::never()
        } else if Self::is_context_span(meta) {
            Interest::always()
        } else {
            Filter::<S>::callsite_enabled(&self.events, meta)
        }
    }

    fn event_enabled(&self, event: &Event<'_>, cx: &layer::Context<'_, S>) -> bool {
        Filter::event_enabled(&self.events, event, cx)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Filter::<S>::max_level_hint(&self.events).map(|hint| hint.max(LevelFilter::INFO))
    }

    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, cx: layer::Context<'_, S>) {
        Filter::on_new_span(&self.events, attrs, id, cx);
    }

    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, cx: layer::Context<'_, S>) {
        Filter::on_record(&self.events, id, values, cx);
    }

    fn on_enter(&self, id: &span::Id, cx: layer::Context<'_, S>) {
        Filter::on_enter(&self.events, id, cx);
    }

    fn on_exit(&self, id: &span::Id, cx: layer::Context<'_, S>) {
        Filter::on_exit(&self.events, id, cx);
    }

    fn on_close(&self, id: span::Id, cx: layer::Context<'_, S>) {
        Filter::on_close(&self.events, id, cx);
    }
}

/// Whether trace contexts of traces this process started are worth sending on: it exports.
fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// Whether the trace of `cx` is to travel on: it has a span, and it is exported here or came
/// from another process.
fn travels(cx: &Context) -> bool {
    cx.span().span_context().is_valid() && (exporting() || cx.get::<Continued>().is_some())
}

/// Writes the current `tracing` span's OpenTelemetry context (`traceparent`, `tracestate`)
/// into outgoing gRPC metadata when the trace is to travel (see the crate docs). Without a
/// current span (or before [`init`]) nothing is written.
pub fn inject(metadata: &mut MetadataMap) {
    if !OTEL_LAYER.load(Ordering::Relaxed) {
        return;
    }
    let cx = tracing::Span::current().context();
    if travels(&cx) {
        opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut MetadataInjector(metadata)));
    }
}

/// Reads the caller's OpenTelemetry context from incoming gRPC metadata; without a valid
/// `traceparent` the context carries no span.
pub fn extract(metadata: &MetadataMap) -> Context {
    opentelemetry::global::get_text_map_propagator(|p| p.extract(&MetadataExtractor(metadata)))
}

/// Makes `cx` (usually from [`extract`]) the parent of `span`, which must not have been
/// entered yet. A context without a valid span (the caller sent no trace context) leaves the
/// span's parent as it was. The trace then counts as continued from another process: its
/// contexts travel on even if this process exports nothing.
pub fn set_parent(span: &tracing::Span, cx: Context) {
    if !OTEL_LAYER.load(Ordering::Relaxed) || !cx.span().span_context().is_valid() {
        return;
    }
    // The only failures are a span disabled by the filters, no OpenTelemetry layer
    // installed, or a span already started: each leaves the span where it was.
    if let Err(e) = span.set_parent(cx.with_value(Continued)) {
        tracing::debug!(error = %e, "span keeps its parent");
    }
}

/// The W3C `traceparent` of `span` (`00-<trace id>-<span id>-<flags>`), to store or send as
/// text (an outbox row, a stream entry), or `None` when the trace is not to travel (see the
/// crate docs) or `span` has no OpenTelemetry span. Cheap when it is `None`: no string is
/// formatted.
pub fn trace_context(span: &tracing::Span) -> Option<Arc<str>> {
    if !OTEL_LAYER.load(Ordering::Relaxed) {
        return None;
    }
    let cx = span.context();
    if !travels(&cx) {
        return None;
    }
    let span = cx.span();
    let sc = span.span_context();
    Some(format!("00-{}-{}-{:02x}", sc.trace_id(), sc.span_id(), sc.trace_flags().to_u8()).into())
}

/// Makes the trace context in `traceparent` (from [`trace_context`], read back from storage
/// or a stream) the parent of `span`, which must not have been entered yet. Text that is not
/// a valid `traceparent` leaves the span's parent as it was.
pub fn set_parent_from_text(span: &tracing::Span, traceparent: &str) {
    if !OTEL_LAYER.load(Ordering::Relaxed) {
        return;
    }
    let cx = opentelemetry::global::get_text_map_propagator(|p| p.extract(&TraceparentExtractor(traceparent)));
    set_parent(span, cx);
}

/// Links `span` to `other` (an OpenTelemetry span link): for work that serves several traces
/// at once, such as a group commit carrying the commits of several commands. A no-op when this
/// process exports nothing: links only matter to exported spans.
pub fn link(span: &tracing::Span, other: &tracing::Span) {
    if !exporting() {
        return;
    }
    let cx = other.context();
    let target = cx.span().span_context().clone();
    if target.is_valid() {
        span.add_link(target);
    }
}

/// Sets an OpenTelemetry attribute of `span` that is not one of its `tracing` fields (they are
/// fixed where the span is declared): for what a lower layer learns about a span it did not
/// create, such as how many commits shared a transaction. A no-op when this process exports
/// nothing.
pub fn set_attribute(span: &tracing::Span, key: &'static str, value: i64) {
    if exporting() {
        span.set_attribute(key, value);
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

/// A carrier holding just a `traceparent`.
struct TraceparentExtractor<'a>(&'a str);

impl Extractor for TraceparentExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        (key == "traceparent").then_some(self.0)
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent"]
    }
}

/// The keys of a JSON log line that no span or event field may replace.
const RESERVED: [&str; 7] = ["timestamp", "level", "target", "span", "message", "trace_id", "span_id"];

/// The JSON log line format: one object per line with `timestamp`, `level`, `target`, `span`
/// (the innermost span's name), `message`, the fields of every enclosing span (outermost
/// first, inner ones winning) and of the event itself, and `trace_id` / `span_id` of the
/// current OpenTelemetry span. Span fields come from the fmt layer's [`JsonFields`].
struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        let mut line = Map::new();
        let mut timestamp = String::new();
        SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
        line.insert("timestamp".into(), timestamp.into());
        line.insert("level".into(), meta.level().as_str().into());
        line.insert("target".into(), meta.target().into());
        if let Some(scope) = ctx.event_scope() {
            let mut innermost = None;
            for span in scope.from_root() {
                let extensions = span.extensions();
                if let Some(fields) = extensions.get::<FormattedFields<N>>()
                    && let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(&fields.fields)
                {
                    for (key, value) in fields {
                        if !RESERVED.contains(&key.as_str()) {
                            line.insert(key, value);
                        }
                    }
                }
                innermost = Some(span.name());
            }
            if let Some(name) = innermost {
                line.insert("span".into(), name.into());
            }
        }
        event.record(&mut JsonVisitor(&mut line));
        // The OpenTelemetry layer makes the entered span's context the current one.
        let cx = Context::current();
        let span = cx.span();
        let sc = span.span_context();
        if sc.is_valid() {
            line.insert("trace_id".into(), sc.trace_id().to_string().into());
            line.insert("span_id".into(), sc.span_id().to_string().into());
        }
        let text = serde_json::to_string(&line).map_err(|_| fmt::Error)?;
        writeln!(writer, "{text}")
    }
}

/// Collects an event's fields into a JSON line.
struct JsonVisitor<'a>(&'a mut Map<String, Value>);

impl JsonVisitor<'_> {
    fn put(&mut self, field: &Field, value: Value) {
        let key = field.name();
        if key == "message" || !RESERVED.contains(&key) {
            self.0.insert(key.to_owned(), value);
        }
    }
}

impl Visit for JsonVisitor<'_> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.into());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, value.to_string().into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, format!("{value:?}").into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
    use std::sync::{Mutex, OnceLock};

    /// Installs the subscriber once for every test of this process (`cargo test` runs them
    /// in one process, nextest one per process); its guard lives as long as the process.
    fn setup() {
        static GUARD: OnceLock<Guard> = OnceLock::new();
        GUARD.get_or_init(|| {
            let guard = init_with("juegoland-telemetry-test", LogFormat::Json);
            // A second call must not panic, and its guard must not stop the first one's spans.
            drop(init_with("juegoland-telemetry-test", LogFormat::Json));
            guard
        });
    }

    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const PARENT: &str = "00f067aa0ba902b7";

    /// A caller's context, as `extract` gives it.
    fn remote() -> Context {
        let trace_id = TraceId::from_hex(TRACE).expect("trace id");
        let parent_id = SpanId::from_hex(PARENT).expect("span id");
        let remote = SpanContext::new(trace_id, parent_id, TraceFlags::SAMPLED, true, TraceState::default());
        Context::new().with_remote_span_context(remote)
    }

    #[test]
    fn inject_then_extract_keeps_the_trace_id() {
        setup();

        let span = tracing::info_span!("test.call");
        set_parent(&span, remote());

        let mut metadata = MetadataMap::new();
        span.in_scope(|| inject(&mut metadata));
        let traceparent = metadata.get("traceparent").expect("a traceparent was written").to_str().expect("ascii");
        assert!(traceparent.starts_with(&format!("00-{TRACE}-")), "{traceparent}");

        let cx = extract(&metadata);
        let got = cx.span().span_context().clone();
        assert!(got.is_remote() && got.is_valid());
        assert_eq!(got.trace_id(), TraceId::from_hex(TRACE).unwrap());
        // What travels is the child span's id, not the parent's.
        assert_ne!(got.span_id(), SpanId::from_hex(PARENT).unwrap());
        assert_eq!(got.span_id(), span.context().span().span_context().span_id());
    }

    #[test]
    fn metadata_without_a_traceparent_gives_no_parent() {
        setup();
        let cx = extract(&MetadataMap::new());
        assert!(!cx.span().span_context().is_valid());
    }

    #[test]
    fn a_continued_trace_travels_as_text_to_every_descendant() {
        setup();
        let call = tracing::info_span!("test.call");
        set_parent(&call, remote());
        // A grandchild of the span that continued the caller's trace, as a commit below a
        // command below a call.
        let commit =
            call.in_scope(|| tracing::info_span!("test.command").in_scope(|| tracing::info_span!("test.commit")));
        let text = trace_context(&commit).expect("a continued trace travels");
        let commit_id = commit.context().span().span_context().span_id();
        assert_eq!(&*text, format!("00-{TRACE}-{commit_id}-01"));

        // Read back on the other side, it is the parent of the delivery.
        let deliver = tracing::info_span!("test.deliver");
        set_parent_from_text(&deliver, &text);
        let delivered = deliver.context().span().span_context().clone();
        assert_eq!(delivered.trace_id(), TraceId::from_hex(TRACE).unwrap());
        assert_ne!(delivered.span_id(), commit_id);
        // And it travels on from there too.
        assert!(trace_context(&deliver).is_some_and(|t| t.starts_with(&format!("00-{TRACE}-"))));

        // Garbage is no parent: a fresh trace, which (no exporter here) does not travel.
        let orphan = tracing::info_span!("test.orphan");
        set_parent_from_text(&orphan, "00-not-a-traceparent");
        assert_ne!(orphan.context().span().span_context().trace_id(), TraceId::from_hex(TRACE).unwrap());
        assert_eq!(trace_context(&orphan), None);
    }

    #[test]
    fn a_trace_started_here_stays_here_without_an_exporter() {
        setup();
        assert!(
            !exporting(),
            "this test needs an environment without OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_TRACES_EXPORTER"
        );
        let span = tracing::info_span!("test.root");
        let root = span.context().span().span_context().clone();
        assert!(root.is_valid(), "the span still has ids");
        assert!(!root.is_sampled(), "nothing would read what it records");
        assert_eq!(trace_context(&span), None, "no text is formatted for a trace nobody exports");
        // Without context activation (text log lines), a child still finds its parent.
        let child = span.in_scope(|| tracing::info_span!("test.child"));
        assert_eq!(child.context().span().span_context().trace_id(), root.trace_id());
        let mut metadata = MetadataMap::new();
        span.in_scope(|| inject(&mut metadata));
        assert!(metadata.is_empty(), "nothing is injected: {metadata:?}");
    }

    /// Log lines written to memory.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Lines {
        type Writer = Lines;

        fn make_writer(&'w self) -> Lines {
            self.clone()
        }
    }

    /// Runs the test `name` again in a process of its own and asserts it passed there; false
    /// in that process, which runs the test itself. Span interest is global to a process:
    /// another test's subscriber (`setup`'s, which keeps traces) would make spans this
    /// process's subscriber alone never makes.
    fn passed_in_a_process_of_its_own(name: &str) -> bool {
        const ALONE: &str = "JUEGOLAND_TELEMETRY_TEST_ALONE";
        if std::env::var_os(ALONE).is_some() {
            return false;
        }
        let exe = std::env::current_exe().expect("the test binary");
        let status = std::process::Command::new(exe)
            .args(["--exact", name, "--test-threads=1", "--nocapture"])
            .env(ALONE, "1")
            .status()
            .expect("run the test binary");
        assert!(status.success(), "{name} failed in a process of its own: {status}");
        true
    }

    #[test]
    fn trace_only_spans_cost_nothing_without_traces_and_stay_out_of_the_log_lines() {
        if passed_in_a_process_of_its_own(
            "tests::trace_only_spans_cost_nothing_without_traces_and_stay_out_of_the_log_lines",
        ) {
            return;
        }
        let lines = Lines::default();
        let info = || EnvFilter::new("info");
        let subscriber =
            tracing_subscriber::registry().with(log_layer_with(LogFormat::Json, lines.clone(), false, info()));
        tracing::subscriber::with_default(subscriber, || {
            let _command = tracing::info_span!(target: "juegoland_test", "match.command", match_id = "m-1").entered();
            let commit = tracing::info_span!(target: TRACE_ONLY, "store.commit", publications = 2u64);
            assert!(commit.is_disabled(), "no layer wants a trace-only span: it is not created");
            let other = tracing::info_span!(target: "ractor::actor", "actor", id = 7u64);
            assert!(other.is_disabled(), "nor another crate's span");
            let _commit = commit.entered();
            tracing::warn!(target: "juegoland_test", "commit failed");
        });
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).expect("utf-8");
        let line: Value = serde_json::from_str(text.lines().next().expect("a line")).expect("json");
        assert_eq!(line["span"], "match.command", "{line}");
        assert_eq!(line["match_id"], "m-1");
        assert!(line.get("publications").is_none(), "{line}");

        // Below `info`, the lines want the span's context: it exists.
        let subscriber = tracing_subscriber::registry().with(log_layer_with(
            LogFormat::Json,
            Lines::default(),
            false,
            EnvFilter::new("info,juegoland=debug"),
        ));
        tracing::subscriber::with_default(subscriber, || {
            assert!(!tracing::info_span!(target: TRACE_ONLY, "store.commit").is_disabled());
        });

        // With the OpenTelemetry layer the span exists, for the traces.
        let provider = SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(log_layer(LogFormat::Json, Lines::default(), true))
            .with(otel_layer(provider.tracer("test"), LogFormat::Json, false));
        tracing::subscriber::with_default(subscriber, || {
            assert!(!tracing::info_span!(target: TRACE_ONLY, "store.commit").is_disabled());
        });
    }

    #[test]
    fn crates_that_log_whole_messages_are_capped_at_info_whatever_rust_log_asks() {
        if passed_in_a_process_of_its_own(
            "tests::crates_that_log_whole_messages_are_capped_at_info_whatever_rust_log_asks",
        ) {
            return;
        }
        let lines = Lines::default();
        let subscriber = tracing_subscriber::registry().with(log_layer_with(
            LogFormat::Json,
            lines.clone(),
            false,
            EnvFilter::new("debug"),
        ));
        tracing::subscriber::with_default(subscriber, || {
            tracing::debug!(target: "rmcp::service", result = "the seat's view", "response message");
            tracing::debug!(target: "socketioxide::client", "received message: 40{{\"token\":\"…\"}}");
            tracing::debug!(target: "engineioxide", "emitting eio msg");
            tracing::info!(target: "rmcp::service", "serve finished");
            tracing::debug!(target: "rmcpx", "another crate");
            tracing::debug!(target: "juegoland_test", "a line of ours");
        });
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).expect("utf-8");
        let messages: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("json")["message"].as_str().unwrap_or("").to_owned())
            .collect();
        assert_eq!(messages, ["serve finished", "another crate", "a line of ours"], "{text}");
    }

    #[test]
    fn json_lines_carry_the_span_fields_and_the_trace_ids() {
        let lines = Lines::default();
        let provider = SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(log_layer(LogFormat::Json, lines.clone(), true))
            .with(otel_layer(provider.tracer("test"), LogFormat::Json, false));
        tracing::subscriber::with_default(subscriber, || {
            let command = tracing::info_span!(
                target: "juegoland_test",
                "match.command",
                match_id = "m-1",
                command_id = "c-1",
                revision = tracing::field::Empty
            );
            command.record("revision", 3u64);
            let _command = command.enter();
            let _commit = tracing::info_span!(target: "juegoland_test", "store.commit", publications = 2u64).entered();
            // An event field named like a reserved key cannot forge it.
            tracing::warn!(target: "juegoland_test", outcome = "applied", level = "forged", "command applied");
        });
        tracing::subscriber::with_default(
            tracing_subscriber::registry().with(log_layer(LogFormat::Json, lines.clone(), false)),
            || tracing::info!(target: "juegoland_test", "outside any span"),
        );
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).expect("utf-8");
        let parsed: Vec<Value> =
            text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
        assert_eq!(parsed.len(), 2, "{text}");
        let line = &parsed[0];
        assert_eq!(line["level"], "WARN");
        assert_eq!(line["message"], "command applied");
        assert_eq!(line["target"], "juegoland_test");
        assert_eq!(line["span"], "store.commit");
        assert_eq!(line["match_id"], "m-1");
        assert_eq!(line["command_id"], "c-1");
        assert_eq!(line["revision"], 3);
        assert_eq!(line["publications"], 2);
        assert_eq!(line["outcome"], "applied");
        let hex =
            |v: &Value, n: usize| v.as_str().is_some_and(|s| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(hex(&line["trace_id"], 32) && hex(&line["span_id"], 16), "{line}");
        assert!(line["timestamp"].as_str().is_some_and(|t| t.contains('T')), "{line}");

        let outside = &parsed[1];
        assert_eq!(outside["message"], "outside any span");
        assert!(outside.get("span").is_none() && outside.get("trace_id").is_none(), "{outside}");
    }
}
