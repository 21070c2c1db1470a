{{/*
Names, labels and the small pieces several templates share.
*/}}

{{- define "ragtrace.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name; truncated to 63 characters (a DNS label) minus room for suffixes. */}}
{{- define "ragtrace.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "ragtrace.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "ragtrace.labels" -}}
helm.sh/chart: {{ include "ragtrace.chart" . }}
app.kubernetes.io/name: {{ include "ragtrace.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels of one component: include "ragtrace.selectorLabels" (dict "root" $ "component" "consumer") */}}
{{- define "ragtrace.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ragtrace.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Labels of one component's objects (common labels plus its selector labels). */}}
{{- define "ragtrace.componentLabels" -}}
{{ include "ragtrace.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "ragtrace.collector.fullname" -}}
{{- printf "%s-collector" (include "ragtrace.fullname" .) }}
{{- end }}

{{- define "ragtrace.consumer.fullname" -}}
{{- printf "%s-consumer" (include "ragtrace.fullname" .) }}
{{- end }}

{{- define "ragtrace.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "ragtrace.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret this chart creates for credentials given inline in values (never used when every
credential names an existingSecret). */}}
{{- define "ragtrace.secretName" -}}
{{- printf "%s-credentials" (include "ragtrace.fullname" .) }}
{{- end }}

{{/*
One credential as an environment variable read from a Secret, never inlined:
  include "ragtrace.credentialEnv" (dict "root" $ "env" "RAGTRACE_REDIS_PASSWORD" "cred" .Values.redis.password "key" "redis-password")
cred is {value, existingSecret, existingSecretKey}. existingSecret wins; an inline value is stored
in the chart's own Secret under "key". Nothing is rendered when neither is set.
*/}}
{{- define "ragtrace.credentialEnv" -}}
{{- $c := .cred }}
{{- if $c.existingSecret }}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      name: {{ $c.existingSecret }}
      key: {{ required (printf "existingSecretKey is required for %s" .env) $c.existingSecretKey }}
{{- else if $c.value }}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      name: {{ include "ragtrace.secretName" .root }}
      key: {{ .key }}
{{- end }}
{{- end }}

{{/* Inline credentials that go into the chart's own Secret, as a dict key -> value. */}}
{{- define "ragtrace.inlineCredentials" -}}
{{- $out := dict }}
{{- if and .Values.kafka.sasl.enabled (not .Values.kafka.sasl.password.existingSecret) .Values.kafka.sasl.password.value }}
{{- $_ := set $out "kafka-sasl-password" .Values.kafka.sasl.password.value }}
{{- end }}
{{- if and (not .Values.redis.password.existingSecret) .Values.redis.password.value }}
{{- $_ := set $out "redis-password" .Values.redis.password.value }}
{{- end }}
{{- if and (not .Values.judge.anthropic.apiKey.existingSecret) .Values.judge.anthropic.apiKey.value }}
{{- $_ := set $out "anthropic-api-key" .Values.judge.anthropic.apiKey.value }}
{{- end }}
{{- range $name, $h := .Values.collector.traceBackend.headers }}
{{- if and (not $h.existingSecret) $h.value }}
{{- $_ := set $out (printf "trace-backend-header-%s" ($name | lower)) $h.value }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/* An image reference; global.imageRegistry replaces the repository's registry host (a first
path part with a dot or port, or localhost), or is prepended when it names none. */}}
{{- define "ragtrace.image" -}}
{{- $tag := .image.tag | default .root.Chart.AppVersion }}
{{- $repo := .image.repository }}
{{- with (.root.Values.global | default dict).imageRegistry }}
{{- $first := regexFind "^[^/]+" $repo }}
{{- if and (contains "/" $repo) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) }}
{{- $repo = trimPrefix (printf "%s/" $first) $repo }}
{{- end }}
{{- $repo = printf "%s/%s" (trimSuffix "/" .) $repo }}
{{- end }}
{{- if .image.digest }}
{{- printf "%s@%s" $repo .image.digest }}
{{- else }}
{{- printf "%s:%s" $repo $tag }}
{{- end }}
{{- end }}

{{/* Topology spread constraints of one component: include "ragtrace.topologySpread" (dict "root"
$ "component" "consumer" "constraints" list); an item without labelSelector selects the
component's pods. */}}
{{- define "ragtrace.topologySpread" -}}
{{- $out := list }}
{{- range .constraints }}
{{- $c := deepCopy . }}
{{- if not (hasKey $c "labelSelector") }}
{{- $sel := include "ragtrace.selectorLabels" (dict "root" $.root "component" $.component) | fromYaml }}
{{- $_ := set $c "labelSelector" (dict "matchLabels" $sel) }}
{{- end }}
{{- $out = append $out $c }}
{{- end }}
{{- if $out }}
{{- toYaml $out }}
{{- end }}
{{- end }}

{{/* Bytes of a Kubernetes memory quantity ("512Mi", "1G", "1.5Gi", "536870912"), as a float;
fails naming `what` on a form it cannot read. include "ragtrace.memoryBytes" (dict "q" "512Mi" "what" "key") */}}
{{- define "ragtrace.memoryBytes" -}}
{{- $q := toString .q }}
{{- if or (kindIs "float64" .q) (kindIs "int64" .q) (kindIs "int" .q) }}
{{- $q = printf "%.0f" (float64 .q) }}
{{- end }}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $q }}
{{- $unit := trimPrefix $num $q }}
{{- $factors := dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 }}
{{- if or (not $num) (not (hasKey $factors $unit)) }}
{{- fail (printf "%s: cannot read the memory quantity %q (use a number with an optional k, M, G, T, Ki, Mi, Gi or Ti suffix)" .what $q) }}
{{- end }}
{{- mulf (float64 $num) (index $factors $unit) }}
{{- end }}

{{/* GOMEMLIMIT of the collector: collector.goMemLimitPercent of its memory limit, in whole MiB;
empty when the percentage is 0 or there is no memory limit. */}}
{{- define "ragtrace.collector.goMemLimit" -}}
{{- $pct := .Values.collector.goMemLimitPercent | int }}
{{- $limit := dig "limits" "memory" "" (.Values.collector.resources | default dict) }}
{{- if and (gt $pct 0) $limit }}
{{- $bytes := include "ragtrace.memoryBytes" (dict "q" $limit "what" "collector.resources.limits.memory") | float64 }}
{{- printf "%dMiB" (divf (mulf $bytes $pct) 104857600 | floor | int) }}
{{- end }}
{{- end }}

{{/* Where TLS material is mounted in the pods. */}}
{{- define "ragtrace.kafkaTlsDir" -}}/etc/ragtrace/tls/kafka{{- end }}
{{- define "ragtrace.redisTlsDir" -}}/etc/ragtrace/tls/redis{{- end }}
