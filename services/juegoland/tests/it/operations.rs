//! The SREs' surface against the running services. Every series a Grafana dashboard
//! (`deploy/grafana/*.json`) or a Prometheus rule (`deploy/prometheus/*.yaml`) selects is
//! in a live `/metrics` scrape of a cluster — nodes, routers, a gateway and a scheduler —
//! that played a Conecta 4 match over a gateway WebSocket, rejected a command, let a turn
//! clock run out and delivered the feed to a webhook; so is every label a selector names, and every label value it pins with
//! `=`. Without a cluster: the dashboards parse, their panel ids are unique, every query is
//! PromQL, and every alert links a section of `docs/runbooks.md` that exists (and every
//! section is linked).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use juegoland_edge::Tokens;
use juegoland_store::Store;
use promql_parser::label::MatchOp;
use promql_parser::parser::{self, Expr};
use promql_parser::util::{ExprVisitor, walk_expr};
use serde_json::{Value, json};

use crate::client::{Client, uuid};
use crate::harness::{Cluster, Proc, create, create_with, scheduler_args};

/// Labels Prometheus gives every series from its scrape target (Prometheus Operator's
/// ServiceMonitors set these); the services never export them.
const TARGET_LABELS: [&str; 7] = ["namespace", "pod", "instance", "job", "container", "endpoint", "service"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The files of the workspace directory `dir` whose names end with `suffix`, sorted.
fn files(dir: &str, suffix: &str) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(root().join(dir)).unwrap_or_else(|e| panic!("read {dir}: {e}"));
    let mut found: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(suffix)))
        .collect();
    found.sort();
    assert!(!found.is_empty(), "no {suffix} file in {dir}");
    found
}

fn read(path: &Path) -> (String, String) {
    let name = path.strip_prefix(root()).unwrap_or(path).display().to_string();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {name}: {e}"));
    (name, text)
}

/// The Grafana dashboards, by file.
fn dashboards() -> Vec<(String, Value)> {
    files("deploy/grafana", ".json")
        .iter()
        .map(|p| {
            let (name, text) = read(p);
            let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name} is not JSON: {e}"));
            (name, json)
        })
        .collect()
}

/// The Prometheus rule files, by file (promtool's unit tests of them aside).
fn rule_files() -> Vec<(String, Value)> {
    let mut found = Vec::new();
    for path in files("deploy/prometheus", ".yaml") {
        let (name, text) = read(&path);
        let yaml: Value = serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{name} is not YAML: {e}"));
        if yaml["tests"].is_array() && yaml["rule_files"].is_array() {
            continue;
        }
        assert!(yaml["groups"].is_array(), "{name} is neither a rule file (groups) nor a promtool test");
        found.push((name, yaml));
    }
    assert!(!found.is_empty(), "no rule file in deploy/prometheus");
    found
}

/// A PromQL expression and where it is written.
struct Query {
    origin: String,
    expr: String,
}

/// Every panel of a dashboard, those inside collapsed rows included.
fn panels(dashboard: &Value) -> Vec<&Value> {
    fn walk<'a>(list: &'a Value, out: &mut Vec<&'a Value>) {
        for panel in list.as_array().into_iter().flatten() {
            out.push(panel);
            walk(&panel["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&dashboard["panels"], &mut out);
    out
}

/// The PromQL of a Grafana variable query: the selector of `label_values(selector, label)`
/// or the expression of `query_result(expr)`; `None` for `label_values(label)`, which
/// selects no series.
fn variable_promql(query: &str) -> Option<String> {
    let query = query.trim();
    if let Some(expr) = query.strip_prefix("query_result(").and_then(|q| q.strip_suffix(')')) {
        return Some(expr.to_owned());
    }
    let args = query.strip_prefix("label_values(").and_then(|q| q.strip_suffix(')'));
    let args = args.unwrap_or_else(|| panic!("a variable query this test does not know: {query}"));
    args.rsplit_once(',').map(|(selector, _label)| selector.trim().to_owned())
}

/// The PromQL of a dashboard: its panels' targets and its query variables.
fn dashboard_queries(file: &str, dashboard: &Value) -> Vec<Query> {
    let mut out = Vec::new();
    for panel in panels(dashboard) {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or_else(|| panic!("{file}: a target without expr: {target}"));
            let origin = format!("{file}: panel {} ({}) target {}", panel["id"], panel["title"], target["refId"]);
            out.push(Query { origin, expr: expr.to_owned() });
        }
    }
    for var in dashboard["templating"]["list"].as_array().into_iter().flatten() {
        if var["type"] != "query" {
            continue;
        }
        let query = var["query"]["query"].as_str().or(var["query"].as_str());
        let query = query.unwrap_or_else(|| panic!("{file}: variable {} has no query", var["name"]));
        if let Some(expr) = variable_promql(query) {
            out.push(Query { origin: format!("{file}: variable {}", var["name"]), expr });
        }
    }
    out
}

/// The rules of a rule file.
fn rules(doc: &Value) -> Vec<&Value> {
    let groups = doc["groups"].as_array().expect("a rule file has groups");
    groups.iter().flat_map(|g| g["rules"].as_array().expect("a group has rules")).collect()
}

/// The PromQL of a rule file, and the series its recording rules define.
fn rule_queries(file: &str, doc: &Value) -> (Vec<Query>, BTreeSet<String>) {
    let (mut queries, mut recorded) = (Vec::new(), BTreeSet::new());
    for rule in rules(doc) {
        let what = match (rule["alert"].as_str(), rule["record"].as_str()) {
            (Some(alert), None) => format!("alert {alert}"),
            (None, Some(record)) => {
                recorded.insert(record.to_owned());
                format!("record {record}")
            }
            _ => panic!("{file}: a rule is an alert or a recording rule: {rule}"),
        };
        let expr = rule["expr"].as_str().unwrap_or_else(|| panic!("{file}: {what} has no expr"));
        queries.push(Query { origin: format!("{file}: {what}"), expr: expr.to_owned() });
    }
    (queries, recorded)
}

/// Every query of every dashboard and rule file, and the series the recording rules define.
fn all_queries() -> (Vec<Query>, BTreeSet<String>) {
    let mut queries: Vec<Query> = dashboards().iter().flat_map(|(file, d)| dashboard_queries(file, d)).collect();
    let mut recorded = BTreeSet::new();
    for (file, doc) in rule_files() {
        let (q, r) = rule_queries(&file, &doc);
        queries.extend(q);
        recorded.extend(r);
    }
    (queries, recorded)
}

/// The expression as Prometheus receives it from Grafana: the range intervals become a
/// duration, every other variable (they only stand in label matchers) `.*`.
fn substitute(expr: &str) -> String {
    let mut text = expr.to_owned();
    for interval in ["__rate_interval", "__interval", "__range"] {
        text = text.replace(&format!("${{{interval}}}"), "5m").replace(&format!("${interval}"), "5m");
    }
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let len = match after.strip_prefix('{') {
            Some(braced) => braced.find('}').expect("a closed ${…}") + 2,
            None => after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len()),
        };
        out.push_str(".*");
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

/// A series selector: the series name and its label matchers.
#[derive(Debug)]
struct Selector {
    name: String,
    /// (label, `=` or not, value).
    matchers: Vec<(String, bool, String)>,
}

struct Selectors(Vec<Selector>);

impl ExprVisitor for Selectors {
    type Error = String;

    fn pre_visit(&mut self, expr: &Expr) -> Result<bool, String> {
        let vs = match expr {
            Expr::VectorSelector(vs) => vs,
            Expr::MatrixSelector(ms) => &ms.vs,
            _ => return Ok(true),
        };
        let equal = |op: &MatchOp| matches!(op, MatchOp::Equal);
        let by_label = vs.matchers.matchers.iter().find(|m| m.name == "__name__" && equal(&m.op));
        let name = vs.name.clone().or_else(|| by_label.map(|m| m.value.clone()));
        let name = name.ok_or_else(|| format!("a selector without a series name: {vs}"))?;
        let matchers = vs.matchers.matchers.iter().filter(|m| m.name != "__name__");
        let matchers = matchers.map(|m| (m.name.clone(), equal(&m.op), m.value.clone())).collect();
        self.0.push(Selector { name, matchers });
        Ok(true)
    }
}

/// The series selectors of a query (which must be PromQL).
fn selectors(query: &Query) -> Vec<Selector> {
    let promql = substitute(&query.expr);
    let expr = parser::parse(&promql).unwrap_or_else(|e| panic!("{}: not PromQL: {e}\n{promql}", query.origin));
    let mut found = Selectors(Vec::new());
    walk_expr(&mut found, &expr).unwrap_or_else(|e| panic!("{}: {e}", query.origin));
    found.0
}

type Labels = BTreeMap<String, String>;

/// A metric family in the scrapes: its type and the label sets of each of its sample names.
#[derive(Default)]
struct Family {
    kind: String,
    samples: BTreeMap<String, Vec<Labels>>,
}

/// The metric families of every scrape, merged.
#[derive(Default)]
struct Scrapes {
    families: BTreeMap<String, Family>,
}

/// A sample line of the text exposition: its name and labels.
fn sample(line: &str) -> (String, Labels) {
    let end = line.find(['{', ' ']).unwrap_or_else(|| panic!("a sample line: {line}"));
    let (name, mut rest) = (line[..end].to_owned(), &line[end..]);
    let mut labels = Labels::new();
    if let Some(mut body) = rest.strip_prefix('{') {
        loop {
            body = body.trim_start_matches(',');
            if let Some(after) = body.strip_prefix('}') {
                rest = after;
                break;
            }
            let (label, after) = body.split_once("=\"").unwrap_or_else(|| panic!("a label in {line}"));
            let mut value = String::new();
            let mut chars = after.char_indices();
            let close = loop {
                match chars.next().unwrap_or_else(|| panic!("an unclosed label value in {line}")) {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next().map(|(_, c)| c) {
                        Some('n') => value.push('\n'),
                        Some(c) => value.push(c),
                        None => panic!("a dangling escape in {line}"),
                    },
                    (_, c) => value.push(c),
                }
            };
            labels.insert(label.to_owned(), value);
            body = &after[close + 1..];
        }
    }
    assert!(rest.starts_with(' '), "a value after the labels: {line}");
    (name, labels)
}

impl Scrapes {
    /// Adds the body of a `/metrics` response (the raw HTTP answer of `Proc::get`).
    fn add(&mut self, process: &str, response: &str) {
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or_else(|| panic!("{process}: no HTTP body"));
        assert!(head.starts_with("HTTP/1.1 200"), "{process}: /metrics answered {head}");
        let mut family: Option<String> = None;
        for line in body.lines() {
            if let Some(declared) = line.strip_prefix("# TYPE ") {
                let (name, kind) = declared.split_once(' ').unwrap_or_else(|| panic!("{process}: {line}"));
                self.families.entry(name.to_owned()).or_default().kind = kind.to_owned();
                family = Some(name.to_owned());
            } else if !line.starts_with('#') && !line.trim().is_empty() {
                let (name, labels) = sample(line);
                let owner = family.as_deref().filter(|f| name.starts_with(f));
                let owner = owner.unwrap_or_else(|| panic!("{process}: {name} comes before its # TYPE line"));
                let family = self.families.get_mut(owner).expect("declared");
                family.samples.entry(name).or_default().push(labels);
            }
        }
    }

    /// The label sets of the sample name `name`: a counter, gauge or summary by its name,
    /// a histogram only by its `_bucket`, `_sum` and `_count` series.
    fn series(&self, name: &str) -> Result<&[Labels], String> {
        if let Some(family) = self.families.get(name) {
            if family.kind == "histogram" {
                return Err(format!("{name} is a histogram: select {name}_bucket, _sum or _count"));
            }
            return Ok(family.samples.get(name).map_or(&[], Vec::as_slice));
        }
        for suffix in ["_bucket", "_sum", "_count"] {
            let Some(base) = name.strip_suffix(suffix) else { continue };
            if let Some(family) = self.families.get(base)
                && (family.kind == "histogram" || (family.kind == "summary" && suffix != "_bucket"))
            {
                return Ok(family.samples.get(name).map_or(&[], Vec::as_slice));
            }
        }
        Err(format!("{name} is in no scrape"))
    }

    /// Whether the scrapes have series the selector can select: its name, every label it
    /// matches on (target labels aside) and every value it pins with `=`.
    fn check(&self, selector: &Selector) -> Result<(), String> {
        let series = self.series(&selector.name)?;
        if series.is_empty() {
            return Err(format!("{} has no series", selector.name));
        }
        for (label, equal, value) in &selector.matchers {
            if TARGET_LABELS.contains(&label.as_str()) {
                continue;
            }
            let seen: BTreeSet<&str> = series.iter().filter_map(|l| l.get(label).map(String::as_str)).collect();
            if seen.is_empty() {
                return Err(format!("{} has no label {label}", selector.name));
            }
            if *equal && !value.is_empty() && !seen.contains(value.as_str()) {
                return Err(format!("{} has no series with {label}=\"{value}\" (seen: {seen:?})", selector.name));
            }
        }
        Ok(())
    }
}

/// The anchors of the sections of `docs/runbooks.md`, as GitHub and Grafana link them: the
/// heading in lower case, spaces as hyphens, other punctuation dropped.
fn runbook_anchors() -> BTreeSet<String> {
    let (_, text) = read(&root().join("docs/runbooks.md"));
    text.lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(|heading| {
            let lower = heading.trim().to_lowercase();
            let kept: String = lower.chars().filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_')).collect();
            kept.replace(' ', "-")
        })
        .collect()
}

#[test]
fn dashboards_and_rules_are_well_formed_and_every_alert_links_its_runbook() {
    let datasource = json!({"type": "prometheus", "uid": "${datasource}"});
    let mut uids = BTreeSet::new();
    for (file, dashboard) in dashboards() {
        let uid = dashboard["uid"].as_str().unwrap_or_else(|| panic!("{file} has no uid"));
        assert!(uids.insert(uid.to_owned()), "{file}: uid {uid} is taken by another dashboard");
        assert!(dashboard["title"].as_str().is_some_and(|t| !t.is_empty()), "{file} has no title");
        let schema = dashboard["schemaVersion"].as_u64().unwrap_or_default();
        assert!((36..=41).contains(&schema), "{file}: schemaVersion {schema} (Grafana 10-11)");
        let vars = dashboard["templating"]["list"].as_array().unwrap_or_else(|| panic!("{file}: no templating"));
        assert!(
            vars.iter().any(|v| v["name"] == "datasource" && v["type"] == "datasource" && v["query"] == "prometheus"),
            "{file}: a `datasource` variable of Prometheus data sources"
        );
        let mut ids = BTreeSet::new();
        for panel in panels(&dashboard) {
            let id = panel["id"].as_u64().unwrap_or_else(|| panel_error(&file, panel, "has no id"));
            assert!(ids.insert(id), "{file}: panel id {id} ({}) is used twice", panel["title"]);
            assert!(panel["gridPos"]["w"].as_u64().is_some(), "{file}: panel {id} has no gridPos");
            if panel["type"] == "row" {
                continue;
            }
            assert_eq!(panel["datasource"], datasource, "{file}: panel {id} reads ${{datasource}}");
            let targets = panel["targets"].as_array().unwrap_or_else(|| panel_error(&file, panel, "has no targets"));
            assert!(!targets.is_empty(), "{file}: panel {id} has no targets");
            for t in targets {
                assert!(t["datasource"].is_null() || t["datasource"] == datasource, "{file}: panel {id}: {t}");
            }
        }
        for query in dashboard_queries(&file, &dashboard) {
            assert!(!selectors(&query).is_empty(), "{}: selects no series", query.origin);
        }
    }

    let anchors = runbook_anchors();
    let mut linked = BTreeSet::new();
    let mut alerts = BTreeSet::new();
    for (file, doc) in rule_files() {
        let (queries, _) = rule_queries(&file, &doc);
        for query in &queries {
            assert!(!selectors(query).is_empty(), "{}: selects no series", query.origin);
        }
        for rule in rules(&doc).into_iter().filter(|r| r["alert"].is_string()) {
            let alert = rule["alert"].as_str().expect("a name");
            assert!(alerts.insert(alert.to_owned()), "{file}: alert {alert} is defined twice");
            let severity = rule["labels"]["severity"].as_str();
            assert!(matches!(severity, Some("page" | "ticket" | "warning")), "{file}: {alert}: severity {severity:?}");
            for annotation in ["summary", "description"] {
                let text = rule["annotations"][annotation].as_str();
                assert!(text.is_some_and(|t| !t.is_empty()), "{file}: {alert} has no {annotation}");
            }
            let url = rule["annotations"]["runbook_url"].as_str();
            let url = url.unwrap_or_else(|| panic!("{file}: {alert} has no runbook_url"));
            let anchor = url.strip_prefix("docs/runbooks.md#");
            let anchor = anchor.unwrap_or_else(|| panic!("{file}: {alert}: {url} is not docs/runbooks.md#<section>"));
            assert!(anchors.contains(anchor), "{file}: {alert}: no section #{anchor} in docs/runbooks.md: {anchors:?}");
            linked.insert(anchor.to_owned());
        }
    }
    assert!(alerts.len() >= 5, "the rules define alerts: {alerts:?}");
    let unlinked: Vec<&String> = anchors.difference(&linked).collect();
    assert!(unlinked.is_empty(), "sections of docs/runbooks.md no alert links: {unlinked:?}");
}

fn panel_error(file: &str, panel: &Value, what: &str) -> ! {
    panic!("{file}: panel {} {what}", panel["title"])
}

/// A turn clock of `turn_ms` that forfeits the player who runs out.
fn forfeit_clock(turn_ms: u64) -> String {
    json!({ "clock": { "mode": { "kind": "perTurn", "turnMs": turn_ms }, "policy": "forfeit" } }).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_series_of_the_dashboards_and_alerts_is_in_a_live_scrape() {
    let secret = "operations-secret-0123456789abcdef0123456789";
    let (cluster, gateway) = Cluster::start_with_gateway("operations", 2, secret, &Cluster::shared_redis()).await;
    let url = cluster.schema.url();
    // The scheduler delivers the feed to a webhook receiver (the webhook series are per endpoint).
    let receiver = juegoland_testkit::WebhookReceiver::start().await;
    let hook = receiver.url("/hooks");
    let webhook = ["--webhook", hook.as_str(), "--webhook-secret", "operations-webhook"];
    let scheduler = Proc::spawn(scheduler_args(&url, &cluster.router_urls(), "operations", &webhook));
    let mut router = cluster.client(0).await;

    // A turn clock that runs out: a node's local timer or the scheduler fires it.
    let clocked = create_with(&mut router, &forfeit_clock(1_000)).await;

    // A Conecta 4 match over the gateway; alice wins in column 0. On the way bob sends a
    // move at a stale revision (a rejection) and mallory, who has no seat, is refused.
    let tokens = Tokens::new(secret.as_bytes(), 600).unwrap();
    let m = create(&mut router).await.to_string();
    let addr = gateway.http.trim_start_matches("http://").to_owned();
    let mut alice = Client::connect_to(&addr, &tokens.issue("alice").unwrap()).await;
    let mut bob = Client::connect_to(&addr, &tokens.issue("bob").unwrap()).await;
    for (who, request) in [(&mut alice, "r-a"), (&mut bob, "r-b")] {
        let snapshot = who.sync(&m, request).await;
        assert_eq!(snapshot["type"], "game.snapshot", "{snapshot}");
    }
    for (revision, column) in [0u64, 1, 0, 1, 0, 1, 0].into_iter().enumerate() {
        let revision = revision as u64;
        let mover = if revision.is_multiple_of(2) { &mut alice } else { &mut bob };
        if revision == 3 {
            mover.drop_disc(&m, &uuid(), 1, 2).await;
            let (ack, _) = mover.recv_type("game.ack").await;
            assert_eq!((ack["status"].as_str(), ack["code"].as_str()), (Some("rejected"), Some("STALE_REVISION")));
        }
        mover.drop_disc(&m, &uuid(), revision, column).await;
        let (ack, _) = mover.recv_type("game.ack").await;
        assert_eq!((ack["status"].as_str(), ack["revision"].as_u64()), (Some("applied"), Some(revision + 1)), "{ack}");
    }
    let mut mallory = Client::connect_to(&addr, &tokens.issue("mallory").unwrap()).await;
    assert_eq!(mallory.sync(&m, "r-m").await["code"], "FORBIDDEN");

    let store = cluster.store().await;
    let deadline = Instant::now() + Duration::from_secs(15);
    while !store.load(clocked).await.expect("load").expect("the clocked match").is_finished() {
        assert!(Instant::now() < deadline, "the turn clock never ran out");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    store.close().await;
    // The matches' creations reach the webhook (the scheduler holds its lease).
    receiver.wait_until(Duration::from_secs(20), "the creations", |r| r.iter().any(|x| x.acknowledged())).await;

    let mut scrapes = Scrapes::default();
    let processes = cluster.nodes.iter().chain(&cluster.routers).chain([&gateway, &scheduler]);
    for p in processes {
        scrapes.add(&p.args.join(" "), &p.get("/metrics").await);
    }

    let (queries, recorded) = all_queries();
    let mut failures = Vec::new();
    let mut selected = BTreeSet::new();
    for query in &queries {
        for selector in selectors(query) {
            if recorded.contains(&selector.name) {
                continue;
            }
            if let Err(e) = scrapes.check(&selector) {
                failures.push(format!("{}: {e}", query.origin));
            }
            selected.insert(selector.name);
        }
    }
    assert!(
        failures.is_empty(),
        "series the dashboards or alerts use but no service exports:\n{}",
        failures.join("\n")
    );
    assert!(selected.len() >= 25, "the dashboards and alerts select the services' series: {selected:?}");

    // The check fails for a misspelled series, a bare histogram, a label the series lacks and a
    // label value never exported.
    for (expr, error) in [
        ("rate(juegoland_comands_total[5m])", "in no scrape"),
        ("juegoland_command_seconds", "is a histogram"),
        ("juegoland_outbox_dispatch_total{reason=\"failed\"}", "no label reason"),
        ("juegoland_outbox_dispatch_total{result=\"faild\"}", "no series with result=\"faild\""),
    ] {
        let query = Query { origin: "a wrong query".into(), expr: expr.into() };
        let errors: Vec<String> = selectors(&query).iter().filter_map(|s| scrapes.check(s).err()).collect();
        assert!(errors.iter().any(|e| e.contains(error)), "{expr}: {errors:?}");
    }

    drop((alice, bob, mallory, scheduler, gateway));
    cluster.stop().await;
}
