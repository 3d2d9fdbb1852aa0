//! The deployment artefacts: the Helm chart (`helm/juegoland`) renders with Helm's own engine
//! and every manifest validates against the Kubernetes JSON schemas (monitoring.coreos.com
//! kinds against the prometheus-operator CRD schemas), for several sets of values; the chart
//! runs only binaries the image builds, with environment variables those binaries read; the
//! image (`deploy/Dockerfile`) builds only binaries of the workspace; and the chart ships the
//! current dashboards and alert rules of `deploy/`.
//!
//! Rendering and validation run in `helm/tools/check_chart.py`, with tools from PyPI and npm
//! that `bash helm/tools/install.sh` puts in `target/tools` (`.ci/run` runs it). Without them
//! these tests fail and say how to install them; they never skip.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use juegoland_tidy::workspace_root;

/// The chart's `kubeVersion` floor and the newest schemas kubernetes-validate bundles.
const KUBE_VERSIONS: &[&str] = &["1.25.0", "1.37.0"];

const INSTALL: &str = "the chart tests need their tools in target/tools: Python 3.10+ with \
    helm-python-sdk (Helm's Go SDK) and kubernetes-validate from PyPI, node with \
    @kubernetes-models/prometheus-operator from npm. Install them with \
    `bash helm/tools/install.sh` (idempotent; .ci/run runs it), then run the tests again";

/// One container of a rendered workload, as check_chart.py lists it.
#[derive(Debug)]
struct Container {
    /// `Kind/name/container`.
    name: String,
    command: Vec<String>,
    env: Vec<String>,
}

impl Container {
    fn has_env(&self, name: &str) -> bool {
        self.env.iter().any(|e| e == name)
    }
}

fn root() -> PathBuf {
    workspace_root()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The Python interpreter and the node_modules directory of the installed tools.
fn tools() -> (PathBuf, PathBuf) {
    let tools = root().join("target/tools");
    let python = tools.join("venv/bin/python");
    let modules = tools.join("node/node_modules");
    let python_ok = Command::new(&python)
        .args(["-c", "import helm_python, kubernetes_validate, yaml"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(python_ok, "{} is missing or lacks its packages: {INSTALL}", python.display());
    let crds = modules.join("@kubernetes-models/prometheus-operator");
    assert!(crds.is_dir(), "{} is missing: {INSTALL}", crds.display());
    let node_ok = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(node_ok, "node is not installed (Debian: apt-get install nodejs): {INSTALL}");
    (python, modules)
}

/// Renders `chart` with the values file `values` (relative to the chart, like `ci/x.yaml`)
/// and validates every manifest; `expect` gives kinds and how many of each must render.
/// Returns the rendered containers after checking them against the binaries.
fn check(chart: &Path, values: Option<&str>, expect: &[(&str, usize)]) -> Vec<Container> {
    let (python, modules) = tools();
    let mut command = Command::new(python);
    command.arg(root().join("helm/tools/check_chart.py")).arg("--chart").arg(chart).arg("--node-modules").arg(modules);
    if let Some(values) = values {
        command.arg("--values").arg(chart.join(values));
    }
    for version in KUBE_VERSIONS {
        command.args(["--kube-version", version]);
    }
    for (kind, count) in expect {
        command.arg("--expect-kind").arg(format!("{kind}={count}"));
    }
    let output = command.output().unwrap_or_else(|e| panic!("run helm/tools/check_chart.py: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the chart {} with values {values:?} does not render to valid manifests \
         (helm/tools/check_chart.py):\n{stderr}{stdout}",
        chart.display()
    );
    let containers: Vec<Container> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("container\t"))
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 3, "a container line of check_chart.py: {line:?}");
            Container {
                name: fields[0].to_owned(),
                command: fields[1].split_whitespace().map(str::to_owned).collect(),
                env: fields[2].split_whitespace().map(str::to_owned).collect(),
            }
        })
        .collect();
    assert!(!containers.is_empty(), "check_chart.py listed no container:\n{stdout}");
    check_containers_against_binaries(&containers);
    containers
}

fn chart() -> PathBuf {
    root().join("helm/juegoland")
}

fn container<'a>(containers: &'a [Container], component: &str) -> &'a Container {
    containers
        .iter()
        .find(|c| c.name.ends_with(&format!("/{component}")))
        .unwrap_or_else(|| panic!("no {component} container in {containers:#?}"))
}

/// The `[[bin]]` targets of the workspace's packages: (binary, the package's directory).
fn workspace_binaries() -> Vec<(String, PathBuf)> {
    let metadata = cargo_metadata::MetadataCommand::new()
        .manifest_path(root().join("Cargo.toml"))
        .no_deps()
        .exec()
        .unwrap_or_else(|e| panic!("run cargo metadata on the workspace: {e}"));
    let mut binaries = Vec::new();
    for package in metadata.workspace_packages() {
        for target in &package.targets {
            if target.is_bin() {
                let dir = package.manifest_path.parent().expect("a manifest has a directory");
                binaries.push((target.name.clone(), dir.as_std_path().to_owned()));
            }
        }
    }
    binaries
}

/// The binaries `deploy/Dockerfile` builds: its `ARG BINARIES="…"` line.
fn dockerfile_binaries() -> Vec<String> {
    let path = root().join("deploy/Dockerfile");
    let text = read(&path);
    let lines: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with("ARG BINARIES=")).collect();
    assert_eq!(lines.len(), 1, "deploy/Dockerfile must list the binaries in one `ARG BINARIES=\"…\"` line");
    let value = lines[0].trim_start().trim_start_matches("ARG BINARIES=").trim().trim_matches('"');
    value.split_whitespace().map(str::to_owned).collect()
}

/// Every `env = "NAME"` in `text` (clap's environment variable of a flag).
fn env_names(text: &str) -> BTreeSet<String> {
    text.split("env = \"").skip(1).filter_map(|rest| rest.split('"').next()).map(str::to_owned).collect()
}

/// The text of `pub struct <name> { … }` in `text`.
fn struct_body<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let start = text.find(&format!("pub struct {name} {{"))?;
    let rest = &text[start..];
    Some(&rest[..rest.find("\n}")?])
}

/// The `env = "…"` names of `pub struct <config>` in `serve`, and of the structs its
/// `#[command(flatten)]` fields name.
fn config_env(serve: &str, config: &str) -> BTreeSet<String> {
    let body =
        struct_body(serve, config).unwrap_or_else(|| panic!("no `pub struct {config}` in libs/roles/src/serve.rs"));
    let mut names = env_names(body);
    for rest in body.split("#[command(flatten)]").skip(1) {
        let field = rest.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with("///")).unwrap_or("");
        let ty = field.split(':').nth(1).unwrap_or("").trim().trim_end_matches(',');
        assert!(!ty.is_empty(), "{config}: a #[command(flatten)] with no field after it");
        names.extend(config_env(serve, ty));
    }
    names
}

/// The environment variables `binary` reads: the `JUEGOLAND_*` of its clap configuration (a
/// service crate flattens one `juegoland_roles::…Config` of `libs/roles/src/serve.rs`; the
/// all-in-one `juegoland` has subcommands, so any of its own and those) and telemetry's.
fn accepted_env(binary: &str, binaries: &[(String, PathBuf)]) -> BTreeSet<String> {
    let (_, dir) = binaries
        .iter()
        .find(|(name, _)| name == binary)
        .unwrap_or_else(|| panic!("{binary} is no [[bin]] of the workspace"));
    let serve = read(&root().join("libs/roles/src/serve.rs"));
    let lib = read(&dir.join("src/lib.rs"));
    let mut accepted = BTreeSet::new();
    let configs: Vec<&str> = lib
        .split("juegoland_roles::")
        .skip(1)
        .filter_map(|rest| rest.split(|c: char| !c.is_alphanumeric() && c != '_').next())
        .filter(|name| name.ends_with("Config"))
        .collect();
    if binary == "juegoland" {
        accepted.extend(env_names(&lib));
        accepted.extend(env_names(&serve));
    } else {
        assert!(!configs.is_empty(), "{}/src/lib.rs flattens no juegoland_roles::…Config", dir.display());
        for config in configs {
            accepted.extend(config_env(&serve, config));
        }
    }
    accepted
}

/// Every container runs a binary the image builds, and sets only variables that binary reads.
fn check_containers_against_binaries(containers: &[Container]) {
    let binaries = workspace_binaries();
    let image = dockerfile_binaries();
    let telemetry = read(&root().join("libs/telemetry/src/lib.rs"));
    let mut failures = Vec::new();
    for c in containers {
        let Some(binary) = c.command.first() else {
            failures.push(format!("{}: no command", c.name));
            continue;
        };
        if !image.contains(binary) {
            failures.push(format!(
                "{}: runs {binary}, which deploy/Dockerfile does not build: add it to ARG BINARIES",
                c.name
            ));
            continue;
        }
        let accepted = accepted_env(binary, &binaries);
        for env in &c.env {
            let known = accepted.contains(env)
                // The chart's own, for $(POD_NAME) in the values after them.
                || env == "POD_NAME"
                || env == "POD_NAMESPACE"
                // libs/telemetry's and the OpenTelemetry SDK's standard variables.
                || telemetry.contains(&format!("`{env}`"))
                || env.starts_with("OTEL_");
            if !known {
                failures.push(format!(
                    "{}: sets {env}, which {binary} does not read (no `env = \"{env}\"` in its \
                     configuration): use the name in libs/roles/src/serve.rs or drop it from the chart",
                    c.name
                ));
            }
        }
    }
    assert!(failures.is_empty(), "the chart and the binaries disagree:\n- {}", failures.join("\n- "));
}

#[test]
fn chart_renders_and_validates_with_its_default_values() {
    let containers = check(
        &chart(),
        None,
        &[
            ("StatefulSet", 1),
            ("Deployment", 3),
            ("HorizontalPodAutoscaler", 3),
            ("PodDisruptionBudget", 4),
            // Each component's Service, and a router's and a gateway's metrics Service.
            ("Service", 6),
            ("ServiceMonitor", 4),
            ("NetworkPolicy", 5),
            ("Job", 1),
        ],
    );
    for component in ["node", "router", "gateway", "scheduler"] {
        let c = container(&containers, component);
        assert_eq!(c.command, [format!("juegoland-{component}")], "{}", c.name);
        assert!(c.has_env("JUEGOLAND_HTTP"), "{}: binds its HTTP server to loopback", c.name);
        assert!(!c.has_env("OTEL_EXPORTER_OTLP_ENDPOINT"), "{}: no OTLP endpoint by default", c.name);
    }
    let node = container(&containers, "node");
    for env in ["JUEGOLAND_NODE_ID", "JUEGOLAND_ADVERTISE", "JUEGOLAND_GRPC", "JUEGOLAND_REDIS_URL"] {
        assert!(node.has_env(env), "the node sets {env}");
    }
    assert!(!node.has_env("JUEGOLAND_EDGE_HTTP"), "nodes serve no clients by default");
    for component in ["router", "gateway"] {
        let c = container(&containers, component);
        assert!(
            c.has_env("JUEGOLAND_METRICS_HTTP"),
            "{}: metrics on a port the public Service does not expose",
            c.name
        );
    }
    assert!(container(&containers, "gateway").has_env("JUEGOLAND_JWT_SECRET"));
    for component in ["node", "gateway"] {
        let c = container(&containers, component);
        assert!(c.has_env("JUEGOLAND_BUS_SECRET"), "{}: the streams are authenticated by default", c.name);
    }
    for component in ["node", "router", "gateway", "scheduler"] {
        let c = container(&containers, component);
        assert!(c.has_env("JUEGOLAND_CLUSTER_SECRET"), "{}: its gRPC calls are authenticated by default", c.name);
    }
    let scheduler = container(&containers, "scheduler");
    assert!(scheduler.has_env("JUEGOLAND_REPLICA_ID"));
    assert!(!scheduler.has_env("JUEGOLAND_WEBHOOKS_FILE"), "no webhooks by default");
}

#[test]
fn chart_renders_without_service_monitors() {
    check(&chart(), Some("ci/servicemonitor-off-values.yaml"), &[("ServiceMonitor", 0), ("PrometheusRule", 0)]);
}

#[test]
fn chart_renders_without_autoscalers() {
    check(&chart(), Some("ci/hpa-off-values.yaml"), &[("HorizontalPodAutoscaler", 0), ("Deployment", 3)]);
}

#[test]
fn chart_renders_with_an_otlp_endpoint() {
    let containers = check(&chart(), Some("ci/otlp-values.yaml"), &[("NetworkPolicy", 5)]);
    for c in &containers {
        assert!(c.has_env("OTEL_EXPORTER_OTLP_ENDPOINT"), "{} exports no spans", c.name);
    }
}

#[test]
fn chart_renders_with_existing_secrets_and_a_public_key() {
    let containers = check(&chart(), Some("ci/production-values.yaml"), &[("Secret", 0), ("StatefulSet", 1)]);
    let gateway = container(&containers, "gateway");
    assert!(gateway.has_env("JUEGOLAND_JWT_PUBLIC_KEY_FILE") && !gateway.has_env("JUEGOLAND_JWT_SECRET"));
    // The nodes serve clients themselves there, verifying tokens as the gateways do.
    let node = container(&containers, "node");
    assert!(node.has_env("JUEGOLAND_EDGE_HTTP") && node.has_env("JUEGOLAND_EDGE_ADVERTISE"));
    assert!(node.has_env("JUEGOLAND_JWT_PUBLIC_KEY_FILE") && !node.has_env("JUEGOLAND_JWT_SECRET"));
    assert!(container(&containers, "router").has_env("JUEGOLAND_PLATFORM_TOKEN"));
    let scheduler = container(&containers, "scheduler");
    assert!(scheduler.has_env("JUEGOLAND_WEBHOOKS_FILE") && scheduler.has_env("JUEGOLAND_WEBHOOK_LEASE_MS"));
}

#[test]
fn chart_renders_without_policies_hooks_and_budgets() {
    check(
        &chart(),
        Some("ci/minimal-values.yaml"),
        &[("NetworkPolicy", 0), ("Job", 0), ("PodDisruptionBudget", 0), ("Secret", 1)],
    );
}

/// A directory removed when dropped, also when a test fails.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A copy of `from` in `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("create {}: {e}", to.display()));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("list {}: {e}", from.display())) {
        let entry = entry.expect("a directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap_or_else(|e| panic!("copy to {}: {e}", target.display()));
        }
    }
}

#[test]
fn chart_ships_the_dashboards_and_alert_rules_in_its_files() {
    // A copy of the chart with two dashboards and rules in both accepted forms (a rule file,
    // a PrometheusRule manifest), whatever deploy/ holds today.
    let dir = TempDir(std::env::temp_dir().join(format!("juegoland-chart-{}", std::process::id())));
    let dir = &dir.0;
    let _ = std::fs::remove_dir_all(dir);
    copy_dir(&chart(), dir);
    let files = dir.join("files");
    for shipped in files_under(&files, &[".json", ".yaml", ".yml"]) {
        std::fs::remove_file(&shipped).unwrap_or_else(|e| panic!("remove {}: {e}", shipped.display()));
    }
    std::fs::write(
        files.join("dashboards/juegoland-commands.json"),
        r#"{"title": "Commands", "uid": "juegoland-commands", "panels": [{"type": "timeseries",
  "targets": [{"expr": "sum(rate(juegoland_commands_total[1m]))"}]}], "schemaVersion": 39}
"#,
    )
    .expect("write a dashboard");
    std::fs::write(files.join("dashboards/Juegoland_Nodes.json"), "{\"title\": \"Nodes\", \"panels\": []}\n")
        .expect("write a dashboard");
    std::fs::write(
        files.join("prometheus/alerts.yaml"),
        "groups:\n  - name: juegoland\n    rules:\n      - alert: JuegolandDeadlineLag\n        \
         expr: histogram_quantile(0.99, sum by (le) (rate(juegoland_scheduler_lag_seconds_bucket[5m]))) > 1\n        \
         for: 5m\n        labels: {severity: warning}\n",
    )
    .expect("write rules");
    std::fs::write(
        files.join("prometheus/nodes.yml"),
        "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: nodes}\nspec:\n  \
         groups:\n    - name: juegoland-nodes\n      rules:\n        - alert: JuegolandNoNodes\n          \
         expr: sum(juegoland_ring_members) == 0\n",
    )
    .expect("write rules");
    check(dir, None, &[("ConfigMap", 2), ("PrometheusRule", 1)]);
    check(
        dir,
        Some("ci/servicemonitor-off-values.yaml"),
        &[("ConfigMap", 2), ("PrometheusRule", 0), ("ServiceMonitor", 0)],
    );
}

/// The files under `dir` (recursively) whose names end with one of `extensions`.
fn files_under(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            found.extend(files_under(&path, extensions));
        } else if extensions.iter().any(|e| path.to_string_lossy().ends_with(e)) {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// Whether a YAML file of deploy/prometheus/ holds alert rules (a rule file or a
/// PrometheusRule), not, say, a scrape configuration or a promtool test.
fn is_rule_file(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("groups:")) || text.contains("kind: PrometheusRule")
}

#[test]
fn chart_copies_of_dashboards_and_alert_rules_equal_deploy() {
    let pairs = [
        ("deploy/grafana", &[".json"][..], "helm/juegoland/files/dashboards", false),
        ("deploy/prometheus", &[".yaml", ".yml"][..], "helm/juegoland/files/prometheus", true),
    ];
    let mut failures = Vec::new();
    for (originals, extensions, copies, rules_only) in pairs {
        let mut expected = BTreeSet::new();
        for original in files_under(&root().join(originals), extensions) {
            let text = read(&original);
            if rules_only && !is_rule_file(&text) {
                continue;
            }
            let name = original.file_name().expect("a file name").to_string_lossy().into_owned();
            let shown = original.strip_prefix(root()).unwrap_or(&original).display().to_string();
            if !expected.insert(name.clone()) {
                failures.push(format!("two files of {originals} are named {name}: the chart's copies are flat"));
            }
            let copy = root().join(copies).join(&name);
            match std::fs::read_to_string(&copy) {
                Ok(copied) if copied == text => {}
                Ok(_) => failures.push(format!("{copies}/{name} differs from {shown}: cp {shown} {copies}/{name}")),
                Err(_) => failures.push(format!("{shown} is not shipped by the chart: cp {shown} {copies}/{name}")),
            }
        }
        for copy in files_under(&root().join(copies), extensions) {
            let name = copy.file_name().expect("a file name").to_string_lossy().into_owned();
            if !expected.contains(&name) {
                failures.push(format!(
                    "{copies}/{name} is no copy of a {} in {originals}: remove it",
                    if rules_only { "rule file (top-level `groups:` or a PrometheusRule)" } else { "dashboard" }
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "the chart's dashboards and alert rules are not deploy/'s:\n- {}",
        failures.join("\n- ")
    );
}

#[test]
fn dockerfile_builds_only_binaries_of_the_workspace() {
    let binaries = workspace_binaries();
    let image = dockerfile_binaries();
    assert!(!image.is_empty(), "deploy/Dockerfile's ARG BINARIES is empty");
    let unknown: Vec<&String> = image.iter().filter(|b| !binaries.iter().any(|(name, _)| name == *b)).collect();
    assert!(
        unknown.is_empty(),
        "deploy/Dockerfile builds {unknown:?}, which are no [[bin]] targets of the workspace \
         (cargo metadata): fix ARG BINARIES; the workspace's binaries are {:?}",
        binaries.iter().map(|(name, _)| name).collect::<Vec<_>>()
    );
    // Every deployed service binary is in the image (a binary is a service's when it lives
    // under services/).
    let services = root().join("services");
    for (name, dir) in &binaries {
        if dir.starts_with(&services) {
            assert!(image.contains(name), "deploy/Dockerfile does not build {name}: add it to ARG BINARIES");
        }
    }
    let text = read(&root().join("deploy/Dockerfile"));
    assert!(
        text.contains("--bin $bin") && text.contains("for bin in ${BINARIES}"),
        "deploy/Dockerfile must build exactly ARG BINARIES (cargo build --bin for each)"
    );
}

#[test]
fn chart_app_version_is_the_workspace_version() {
    let metadata = cargo_metadata::MetadataCommand::new()
        .manifest_path(root().join("Cargo.toml"))
        .no_deps()
        .exec()
        .unwrap_or_else(|e| panic!("run cargo metadata on the workspace: {e}"));
    let binaries = workspace_binaries();
    let (_, dir) = binaries.iter().find(|(name, _)| name == "juegoland-node").expect("juegoland-node is a binary");
    let version = metadata
        .workspace_packages()
        .into_iter()
        .find(|p| p.manifest_path.parent().is_some_and(|d| d.as_std_path() == dir))
        .map(|p| p.version.to_string())
        .expect("the package of juegoland-node");
    let chart = read(&root().join("helm/juegoland/Chart.yaml"));
    assert!(
        chart.lines().any(|l| l == format!("appVersion: \"{version}\"")),
        "helm/juegoland/Chart.yaml's appVersion (the default image tag) must be the binaries' \
         version: set `appVersion: \"{version}\"` and bump the chart's version"
    );
}

#[test]
fn chart_names_only_variables_the_binaries_read() {
    // Every JUEGOLAND_* the templates and values.yaml name, rendered with the tested values
    // or not: a flag's `env = "…"` in libs/roles/src/serve.rs or services/juegoland/src, or
    // a variable libs/telemetry documents.
    let mut known = env_names(&read(&root().join("libs/roles/src/serve.rs")));
    for file in files_under(&root().join("services/juegoland/src"), &[".rs"]) {
        known.extend(env_names(&read(&file)));
    }
    let telemetry = read(&root().join("libs/telemetry/src/lib.rs"));
    let chart = chart();
    let mut sources = files_under(&chart.join("templates"), &[".yaml", ".tpl", ".txt"]);
    sources.push(chart.join("values.yaml"));
    let mut failures = BTreeSet::new();
    for file in sources {
        let text = read(&file);
        for (at, _) in text.match_indices("JUEGOLAND_") {
            let name: String =
                text[at..].chars().take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_').collect();
            // "JUEGOLAND_*" names the prefix, not a variable.
            let prefix = name == "JUEGOLAND_";
            if !prefix && !known.contains(&name) && !telemetry.contains(&format!("`{name}`")) {
                let shown = file.strip_prefix(root()).unwrap_or(&file).display().to_string();
                failures.insert(format!("{shown} names {name}, which no binary reads"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "the chart names variables the binaries do not read (see libs/roles/src/serve.rs):\n- {}",
        failures.into_iter().collect::<Vec<_>>().join("\n- ")
    );
}

#[test]
fn alert_rules_pass_promtool_and_their_unit_tests() {
    // Every rule file of deploy/prometheus/ is valid to Prometheus, and the unit tests of
    // alerts_test.yaml (series in, alerts out: each failure the rules must page or warn on,
    // and a healthy cluster that stays silent) pass. promtool comes with Debian's
    // `prometheus` package, which scripts/setup installs.
    let dir = root().join("deploy/prometheus");
    let run = |args: &[&str]| {
        let out = Command::new("promtool")
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap_or_else(|e| panic!("promtool {args:?}: {e} (scripts/setup installs it: Debian's prometheus)"));
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "promtool {args:?} failed:\n{said}");
        said
    };
    let rules: Vec<String> = files_under(&dir, &[".yaml", ".yml"])
        .into_iter()
        .filter(|p| is_rule_file(&read(p)))
        .map(|p| p.file_name().expect("a file name").to_string_lossy().into_owned())
        .collect();
    assert!(rules.contains(&"alerts.yaml".to_owned()), "{rules:?}");
    let mut check = vec!["check", "rules"];
    check.extend(rules.iter().map(String::as_str));
    run(&check);
    let tests = run(&["test", "rules", "alerts_test.yaml"]);
    assert!(tests.contains("SUCCESS"), "{tests}");
}
