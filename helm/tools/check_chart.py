#!/usr/bin/env python3
"""Renders the Helm chart and validates every manifest; run by libs/tidy/tests/chart.rs.

Rendering is Helm's own engine (the Helm Go SDK through the `helm-python-sdk` package: the
templates, Sprig, `.Files`, `lookup` answering empty as in `helm template`), and `helm lint`
from the same SDK. Built-in kinds are validated strictly (unknown fields are errors) against
the Kubernetes JSON schemas that `kubernetes-validate` bundles, for every --kube-version;
monitoring.coreos.com kinds against the prometheus-operator CRD schemas that the npm package
`@kubernetes-models/prometheus-operator` compiles (helm/tools/validate_crds.mjs, run by node).
On top of the schemas, the cross-references a schema cannot see are checked: selectors that
select something, ports that exist, Secrets and keys that exist, hooks in order, the security
contexts and probes every workload must have.

Prints the problems and exits 1 when there are any; otherwise prints a summary, and lines
`container<TAB>command<TAB>env names…` that the Rust test compares with the binaries.

Install the tools with `bash .ci/run` or by hand (see the Rust test's message).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import helm_python
import kubernetes_validate
import yaml
from kubernetes_validate.utils import InvalidSchemaError, SchemaNotFoundError, VersionNotSupportedError

CRD_GROUPS = {"monitoring.coreos.com/v1"}
WORKLOADS = {"Deployment", "StatefulSet", "Job"}
REQUIRED_LABELS = [
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/component",
    "app.kubernetes.io/managed-by",
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chart", required=True)
    parser.add_argument("--values", help="a values file, as `helm template -f`")
    parser.add_argument("--release", default="jl")
    parser.add_argument("--namespace", default="games")
    parser.add_argument("--kube-version", action="append", required=True, help="e.g. 1.25.0")
    parser.add_argument("--node-modules", required=True, help="where @kubernetes-models is installed")
    parser.add_argument("--expect-kind", action="append", default=[], help="KIND=COUNT that must render")
    args = parser.parse_args()

    values = {}
    if args.values:
        with open(args.values, encoding="utf-8") as f:
            values = yaml.safe_load(f) or {}

    problems = []
    lint = helm_python.lint(args.chart, values, strict=True, namespace=args.namespace)
    for message in lint["messages"]:
        if message["severity"] >= 2:
            problems.append(f"helm lint: {message['path']}: {message['error']}")
    for error in lint["errors"]:
        problems.append(f"helm lint: {error}")

    chart = helm_python.Chart.load(args.chart)
    try:
        rendered = chart.render(values, name=args.release, namespace=args.namespace, is_install=True)
    except helm_python.HelmError as e:
        fail([f"helm render: {e}"])
    docs = []
    for path, text in sorted(rendered.items()):
        if path.endswith("NOTES.txt"):
            continue
        try:
            for doc in yaml.safe_load_all(text):
                if doc is not None:
                    docs.append((path, doc))
        except yaml.YAMLError as e:
            problems.append(f"{path}: the rendered text is not YAML: {e}")
    if not docs:
        fail(problems + ["the chart rendered no manifest"])

    builtin = [(p, d) for p, d in docs if d.get("apiVersion") not in CRD_GROUPS]
    custom = [(p, d) for p, d in docs if d.get("apiVersion") in CRD_GROUPS]
    for version in args.kube_version:
        for path, doc in builtin:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as e:
                where = "/".join(str(p) for p in e.path)
                problems.append(f"{path}: {ident(doc)} is invalid for Kubernetes {version} at {where}: {e.message}")
            except (SchemaNotFoundError, InvalidSchemaError, VersionNotSupportedError) as e:
                problems.append(f"{path}: {ident(doc)}: {e.message}")
    if custom:
        problems += validate_crds(args.node_modules, custom)

    problems += check_references(docs, values)
    problems += check_expected_kinds(docs, args.expect_kind)
    if problems:
        fail(problems)

    kinds = {}
    for _, doc in docs:
        kinds[doc["kind"]] = kinds.get(doc["kind"], 0) + 1
    print(
        f"ok: {len(docs)} manifests ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}); "
        f"Kubernetes {', '.join(args.kube_version)} schemas (strict), "
        f"{len(custom)} monitoring.coreos.com/v1 resources against the CRD schemas; "
        f"Helm SDK {helm_python.helm_sdk_version()}, kubernetes-validate {kubernetes_validate.__version__}"
    )
    for _, doc in docs:
        for container in containers(doc):
            env = " ".join(e["name"] for e in container.get("env", []))
            command = " ".join(container.get("command", []))
            print(f"container\t{ident(doc)}/{container['name']}\t{command}\t{env}")


def fail(problems):
    print(f"{len(problems)} problem(s) in the rendered chart:", file=sys.stderr)
    for problem in problems:
        print(f"- {problem}", file=sys.stderr)
    sys.exit(1)


def ident(doc):
    return f"{doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}"


def pod_spec(doc):
    if doc.get("kind") in WORKLOADS:
        return doc["spec"]["template"]["spec"]
    return None


def containers(doc):
    spec = pod_spec(doc)
    return spec.get("containers", []) + spec.get("initContainers", []) if spec else []


def validate_crds(node_modules, custom):
    """Validates monitoring.coreos.com resources with the CRD schemas, through node."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "validate_crds.mjs")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([{"path": p, "resource": d} for p, d in custom], f)
        listing = f.name
    try:
        run = subprocess.run(
            ["node", script, node_modules, listing], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        return ["node is not installed: the ServiceMonitor and PrometheusRule schemas run on node"]
    finally:
        os.unlink(listing)
    if run.returncode != 0:
        lines = [line for line in (run.stdout + run.stderr).splitlines() if line.strip()]
        return lines or [f"validate_crds.mjs exited with {run.returncode}"]
    return []


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_references(docs, values):
    """What no schema sees: that the pieces of the chart fit together."""
    problems = []
    by_kind = {}
    for _, doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)
    workloads = [d for _, d in docs if d["kind"] in WORKLOADS]
    pod_labels = [d["spec"]["template"]["metadata"].get("labels", {}) for d in workloads]
    services = by_kind.get("Service", [])
    secrets = {d["metadata"]["name"]: d for d in by_kind.get("Secret", [])}
    external_secrets = {
        s
        for s in [
            values.get("postgresql", {}).get("existingSecret"),
            values.get("redis", {}).get("existingSecret"),
            values.get("jwt", {}).get("existingSecret"),
            values.get("busSecret", {}).get("existingSecret"),
            values.get("clusterSecret", {}).get("existingSecret"),
            values.get("platformToken", {}).get("existingSecret"),
        ]
        if s
    }

    seen = set()
    for path, doc in docs:
        key = (doc.get("apiVersion"), doc.get("kind"), doc["metadata"].get("namespace"), doc["metadata"].get("name"))
        if key in seen:
            problems.append(f"{path}: two manifests are named {ident(doc)}")
        seen.add(key)
        labels = doc["metadata"].get("labels", {})
        for label in REQUIRED_LABELS:
            if label not in labels:
                problems.append(f"{path}: {ident(doc)} lacks the label {label}")

    for doc in workloads:
        name = ident(doc)
        template = doc["spec"]["template"]
        spec = template["spec"]
        selector = doc["spec"].get("selector", {}).get("matchLabels")
        if doc["kind"] != "Job" and not selects(selector, template["metadata"].get("labels", {})):
            problems.append(f"{name}: its selector does not select its own pod template")
        pod_security = spec.get("securityContext", {})
        if pod_security.get("runAsNonRoot") is not True:
            problems.append(f"{name}: the pod must set securityContext.runAsNonRoot: true")
        if pod_security.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            problems.append(f"{name}: the pod must use the RuntimeDefault seccomp profile")
        if spec.get("automountServiceAccountToken") is not False:
            problems.append(f"{name}: no service uses the Kubernetes API; do not mount its token")
        mounted = {v["name"]: v for v in spec.get("volumes", [])}
        for container in containers(doc):
            where = f"{name} container {container['name']}"
            security = container.get("securityContext", {})
            if security.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{where}: the root filesystem must be read-only")
            if security.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{where}: allowPrivilegeEscalation must be false")
            if "ALL" not in security.get("capabilities", {}).get("drop", []):
                problems.append(f"{where}: must drop ALL capabilities")
            if not container.get("command"):
                problems.append(f"{where}: names no command (the image holds several binaries)")
            if not container.get("resources", {}).get("requests"):
                problems.append(f"{where}: sets no resource requests")
            for mount in container.get("volumeMounts", []):
                if mount["name"] not in mounted:
                    problems.append(f"{where}: mounts the undeclared volume {mount['name']}")
            port_names = {p.get("name") for p in container.get("ports", [])}
            if doc["kind"] != "Job":
                for probe, path in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")]:
                    get = container.get(probe, {}).get("httpGet")
                    if not get or get.get("path") != path:
                        problems.append(f"{where}: needs a {probe} on {path}")
                    elif get.get("port") not in port_names:
                        problems.append(f"{where}: the {probe} port {get.get('port')} is not a container port")
            defined = set()
            for env in container.get("env", []):
                value = env.get("value", "")
                for ref in [part.split(")")[0] for part in value.split("$(")[1:]]:
                    if ref not in defined:
                        problems.append(f"{where}: {env['name']} uses $({ref}) before it is defined")
                defined.add(env["name"])
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    problems += check_secret_ref(where, doc, ref, secrets, external_secrets)
            for volume in spec.get("volumes", []):
                secret = volume.get("secret")
                if secret:
                    for item in secret.get("items", []):
                        ref = {"name": secret["secretName"], "key": item["key"]}
                        problems += check_secret_ref(where, doc, ref, secrets, external_secrets)
        if doc["kind"] == "Job":
            hooks = doc["metadata"].get("annotations", {}).get("helm.sh/hook", "")
            if not {"pre-install", "pre-upgrade"} <= set(hooks.split(",")):
                problems.append(f"{name}: the migrations Job must be a pre-install,pre-upgrade hook")
        if doc["kind"] == "StatefulSet":
            headless = [s for s in services if s["metadata"]["name"] == doc["spec"].get("serviceName")]
            if not headless or headless[0]["spec"].get("clusterIP") != "None":
                problems.append(f"{name}: serviceName must name a headless Service of the chart")
        if doc["kind"] in ("StatefulSet", "Deployment"):
            if not spec.get("terminationGracePeriodSeconds"):
                problems.append(f"{name}: set terminationGracePeriodSeconds (the drain's bound)")

    for service in services:
        selector = service["spec"].get("selector")
        if not any(selects(selector, labels) for labels in pod_labels):
            problems.append(f"{ident(service)}: its selector matches no pod of the chart")
        for port in service["spec"].get("ports", []):
            target = port.get("targetPort")
            if isinstance(target, str):
                backing = [d for d in workloads if selects(selector, d["spec"]["template"]["metadata"].get("labels", {}))]
                names = {p.get("name") for d in backing for c in containers(d) for p in c.get("ports", [])}
                if target not in names:
                    problems.append(f"{ident(service)}: targetPort {target} is no container port")

    for monitor in by_kind.get("ServiceMonitor", []):
        selector = monitor["spec"].get("selector", {}).get("matchLabels")
        chosen = [s for s in services if selects(selector, s["metadata"].get("labels", {}))]
        if len(chosen) != 1:
            problems.append(f"{ident(monitor)}: selects {len(chosen)} Services, not one")
            continue
        names = {p.get("name") for p in chosen[0]["spec"].get("ports", [])}
        endpoints = monitor["spec"].get("endpoints", [])
        if not endpoints:
            problems.append(f"{ident(monitor)}: has no endpoints")
        for endpoint in endpoints:
            if endpoint.get("port") not in names:
                problems.append(f"{ident(monitor)}: port {endpoint.get('port')} is not a port of {ident(chosen[0])}")
            if endpoint.get("path") != "/metrics":
                problems.append(f"{ident(monitor)}: scrapes {endpoint.get('path')}, not /metrics")

    deployments = {d["metadata"]["name"]: d for d in by_kind.get("Deployment", [])}
    for hpa in by_kind.get("HorizontalPodAutoscaler", []):
        target = hpa["spec"]["scaleTargetRef"]
        deployment = deployments.get(target["name"])
        if target["kind"] != "Deployment" or deployment is None:
            problems.append(f"{ident(hpa)}: scales {target['kind']}/{target['name']}, which the chart does not render")
        elif "replicas" in deployment["spec"]:
            problems.append(f"{ident(hpa)}: {ident(deployment)} sets replicas, which fights the autoscaler")

    for budget in by_kind.get("PodDisruptionBudget", []):
        if not any(selects(budget["spec"]["selector"].get("matchLabels"), labels) for labels in pod_labels):
            problems.append(f"{ident(budget)}: selects no pod of the chart")

    for policy in by_kind.get("NetworkPolicy", []):
        if not any(selects(policy["spec"]["podSelector"].get("matchLabels"), labels) for labels in pod_labels):
            problems.append(f"{ident(policy)}: applies to no pod of the chart")
        for rule in policy["spec"].get("ingress", []) + policy["spec"].get("egress", []):
            for peer in rule.get("from", []) + rule.get("to", []):
                if set(peer) == {"podSelector"}:
                    if not any(selects(peer["podSelector"].get("matchLabels"), labels) for labels in pod_labels):
                        problems.append(f"{ident(policy)}: a rule names pods the chart does not run")

    for config_map in by_kind.get("ConfigMap", []):
        for key, text in (config_map.get("data") or {}).items():
            if not re.fullmatch(r"[-._a-zA-Z0-9]+", key):
                problems.append(f"{ident(config_map)}: {key!r} is not a valid ConfigMap key (rename the file)")
            if key.endswith(".json"):
                try:
                    json.loads(text)
                except json.JSONDecodeError as e:
                    problems.append(f"{ident(config_map)}: {key} is not JSON: {e}")
    return problems


def check_secret_ref(where, doc, ref, secrets, external_secrets):
    secret = secrets.get(ref["name"])
    if secret is None:
        if ref["name"] in external_secrets:
            return []
        return [f"{where}: reads Secret {ref['name']}, which is neither rendered nor an existingSecret"]
    if ref["key"] not in (secret.get("data") or {}) and ref["key"] not in (secret.get("stringData") or {}):
        return [f"{where}: reads key {ref['key']} that Secret {ref['name']} does not hold"]
    hook = doc["metadata"].get("annotations", {}).get("helm.sh/hook")
    if hook:
        secret_annotations = secret["metadata"].get("annotations", {})
        weight = int(secret_annotations.get("helm.sh/hook-weight", "0"))
        own = int(doc["metadata"].get("annotations", {}).get("helm.sh/hook-weight", "0"))
        if secret_annotations.get("helm.sh/hook") != hook or weight >= own:
            return [f"{where}: a {hook} hook reads Secret {ref['name']}, which does not exist yet then"]
    return []


def check_expected_kinds(docs, expected):
    problems = []
    for item in expected:
        kind, count = item.split("=")
        found = sum(1 for _, d in docs if d["kind"] == kind)
        if found != int(count):
            problems.append(f"expected {count} {kind} manifest(s) with these values, found {found}")
    return problems


if __name__ == "__main__":
    main()
