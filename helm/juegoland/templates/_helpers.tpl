{{/*
Names, labels and the pieces every workload shares. Component templates pass a dict:
(dict "ctx" $ "component" "node").
*/}}

{{/* The chart name. */}}
{{- define "juegoland.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every resource: 40 characters at most, so "<prefix>-node-headless" and the
StatefulSet's pod names stay within the 63 characters of a DNS label. */}}
{{- define "juegoland.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "<fullname>-<component>". */}}
{{- define "juegoland.componentName" -}}
{{- printf "%s-%s" (include "juegoland.fullname" .ctx) .component -}}
{{- end -}}

{{- define "juegoland.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels that select a component's pods; never change them (selectors are immutable). */}}
{{- define "juegoland.selectorLabels" -}}
app.kubernetes.io/name: {{ include "juegoland.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Every resource's labels. */}}
{{- define "juegoland.labels" -}}
helm.sh/chart: {{ include "juegoland.chart" .ctx }}
{{ include "juegoland.selectorLabels" . }}
app.kubernetes.io/part-of: juegoland
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
{{- end -}}

{{- define "juegoland.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The Secret the chart creates for whatever is given inline. */}}
{{- define "juegoland.secretName" -}}
{{- printf "%s-secrets" (include "juegoland.fullname" .) -}}
{{- end -}}

{{/* The routers' gRPC URLs (JUEGOLAND_ROUTERS). */}}
{{- define "juegoland.routers" -}}
{{- if .Values.routers -}}
{{- join "," .Values.routers -}}
{{- else -}}
{{- printf "http://%s.%s.svc.%s:%v" (include "juegoland.componentName" (dict "ctx" . "component" "router")) .Release.Namespace .Values.clusterDomain .Values.router.ports.grpc -}}
{{- end -}}
{{- end -}}

{{/* An env entry read from a Secret: (dict "name" "JUEGOLAND_DATABASE_URL" "secret" "s" "key" "k"). */}}
{{- define "juegoland.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .key }}
{{- end -}}

{{- define "juegoland.clusterSecretEnv" -}}
{{- $secret := default (include "juegoland.secretName" .) .Values.clusterSecret.existingSecret -}}
{{- include "juegoland.secretEnv" (dict "name" "JUEGOLAND_CLUSTER_SECRET" "secret" $secret "key" .Values.clusterSecret.existingSecretKey) -}}
{{- end -}}

{{- define "juegoland.databaseUrlEnv" -}}
{{- $secret := default (include "juegoland.secretName" .) .Values.postgresql.existingSecret -}}
{{- include "juegoland.secretEnv" (dict "name" "JUEGOLAND_DATABASE_URL" "secret" $secret "key" .Values.postgresql.existingSecretKey) -}}
{{- end -}}

{{- define "juegoland.redisUrlEnv" -}}
{{- $secret := default (include "juegoland.secretName" .) .Values.redis.existingSecret -}}
{{- include "juegoland.secretEnv" (dict "name" "JUEGOLAND_REDIS_URL" "secret" $secret "key" .Values.redis.existingSecretKey) -}}
{{- end -}}

{{/* The pod's own name and namespace, for $(POD_NAME) in the values that follow. */}}
{{- define "juegoland.podEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end -}}

{{/* Logs and traces (libs/telemetry); after juegoland.podEnv. */}}
{{- define "juegoland.telemetryEnv" -}}
- name: RUST_LOG
  value: {{ .Values.log.level | quote }}
- name: JUEGOLAND_TRACE_FILTER
  value: {{ .Values.log.traceFilter | quote }}
{{- with .Values.log.format }}
- name: JUEGOLAND_LOG_FORMAT
  value: {{ . | quote }}
{{- end }}
{{- with .Values.otlp.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: "k8s.pod.name=$(POD_NAME),k8s.namespace.name=$(POD_NAMESPACE)"
{{- end }}
{{- range $name, $value := .Values.otlp.env }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end -}}

{{/* The pod-level settings every workload shares: (dict "ctx" $ "values" .Values.node). */}}
{{- define "juegoland.podCommon" -}}
automountServiceAccountToken: false
enableServiceLinks: false
{{- with .ctx.Values.serviceAccountName }}
serviceAccountName: {{ . }}
{{- end }}
{{- with .ctx.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .ctx.Values.podSecurityContext | nindent 2 }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A container's security context and image. */}}
{{- define "juegoland.containerCommon" -}}
image: {{ include "juegoland.image" . | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
securityContext:
  {{- toYaml .Values.containerSecurityContext | nindent 2 }}
{{- end -}}

{{/* Probes on the component's HTTP port: /healthz (alive), /readyz (taking traffic; a draining
node answers 503), and a start-up allowance for connecting and migrating. */}}
{{- define "juegoland.probes" -}}
startupProbe:
  httpGet:
    path: /healthz
    port: http
  periodSeconds: 2
  failureThreshold: 60
livenessProbe:
  httpGet:
    path: /healthz
    port: http
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz
    port: http
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 2
{{- end -}}

{{/* A preStop hook that waits this many seconds before the SIGTERM (the image has sleep). */}}
{{- define "juegoland.preStop" -}}
lifecycle:
  preStop:
    exec:
      command: ["sleep", "{{ . }}"]
{{- end -}}

{{/* /tmp as a small emptyDir: the root filesystem is read-only. */}}
{{- define "juegoland.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- end -}}

{{- define "juegoland.tmpMount" -}}
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* The published packages' registry (values `packages`): its volume, mount and variable, each
empty without a volume. */}}
{{- define "juegoland.packagesVolume" -}}
{{- with .Values.packages.volume }}
- name: packages
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "juegoland.packagesMount" -}}
{{- if .Values.packages.volume }}
- name: packages
  mountPath: {{ .Values.packages.mountPath }}
  readOnly: true
{{- end }}
{{- end -}}

{{- define "juegoland.packagesEnv" -}}
{{- if .Values.packages.volume }}
- name: JUEGOLAND_REGISTRY
  value: {{ .Values.packages.mountPath | quote }}
{{- end }}
{{- end -}}

{{/* Pod annotations that roll the pods when the chart's Secret changes. */}}
{{- define "juegoland.podAnnotations" -}}
checksum/secrets: {{ include (print .ctx.Template.BasePath "/secret.yaml") .ctx | sha256sum }}
{{- with .values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}
