#!/usr/bin/env bash
# Installs the chart's test tools (libs/tidy/tests/chart.rs) into target/tools, from PyPI and
# npm: helm-python-sdk (Helm's Go SDK, renders and lints the chart), kubernetes-validate (the
# Kubernetes JSON schemas) and @kubernetes-models/prometheus-operator (the ServiceMonitor and
# PrometheusRule CRD schemas, run by node). Idempotent: does nothing while the installed pins
# equal helm/tools/requirements.txt and package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools=target/tools

if ! cmp -s helm/tools/requirements.txt "$tools/venv/.installed" \
  || ! "$tools/venv/bin/python" -c 'import helm_python, kubernetes_validate, yaml' 2>/dev/null; then
  echo "==> chart tools: helm-python-sdk, kubernetes-validate (PyPI) into $tools/venv"
  rm -rf "$tools/venv"
  python3 -m venv "$tools/venv"
  "$tools/venv/bin/pip" install --quiet --disable-pip-version-check -r helm/tools/requirements.txt
  cp helm/tools/requirements.txt "$tools/venv/.installed"
fi

if ! cmp -s helm/tools/package-lock.json "$tools/node/.installed" \
  || [ ! -d "$tools/node/node_modules/@kubernetes-models/prometheus-operator" ]; then
  echo "==> chart tools: @kubernetes-models/prometheus-operator (npm) into $tools/node"
  rm -rf "$tools/node"
  mkdir -p "$tools/node"
  cp helm/tools/package.json helm/tools/package-lock.json "$tools/node/"
  # The package asks for node >= 22 but runs on the machine's node 20 (the tests prove it).
  npm ci --prefix "$tools/node" --no-audit --no-fund --loglevel=error
  cp helm/tools/package-lock.json "$tools/node/.installed"
fi
