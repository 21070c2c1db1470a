{{/*
Additions merged over the project's collector/config.yaml (the collector merges every --config in
order): TLS and SASL of each kafka exporter it defines, and the trace backend's headers (values
from environment variables backed by Secrets). Empty when there is nothing to add.
*/}}
{{- define "ragtrace.collector.overlay" -}}
{{- $base := .Files.Get "files/collector-config.yaml" | fromYaml }}
{{- $exporters := dict }}
{{- range $id, $_ := (get $base "exporters" | default dict) }}
{{- if or (eq $id "kafka") (hasPrefix "kafka/" $id) }}
{{- $e := dict }}
{{- if $.Values.kafka.tls.enabled }}
{{- $tls := dict "insecure_skip_verify" $.Values.kafka.tls.insecureSkipVerify }}
{{- with $.Values.kafka.tls.existingSecret }}
{{- $_ := set $tls "ca_file" (printf "%s/%s" (include "ragtrace.kafkaTlsDir" $) $.Values.kafka.tls.caKey) }}
{{- if and $.Values.kafka.tls.certKey $.Values.kafka.tls.keyKey }}
{{- $_ := set $tls "cert_file" (printf "%s/%s" (include "ragtrace.kafkaTlsDir" $) $.Values.kafka.tls.certKey) }}
{{- $_ := set $tls "key_file" (printf "%s/%s" (include "ragtrace.kafkaTlsDir" $) $.Values.kafka.tls.keyKey) }}
{{- end }}
{{- end }}
{{- $_ := set $e "tls" $tls }}
{{- end }}
{{- if $.Values.kafka.sasl.enabled }}
{{- $sasl := dict "mechanism" $.Values.kafka.sasl.mechanism "username" "${env:RAGTRACE_KAFKA_SASL_USERNAME}" "password" "${env:RAGTRACE_KAFKA_SASL_PASSWORD}" }}
{{- $_ := set $e "auth" (dict "sasl" $sasl) }}
{{- end }}
{{- if $e }}
{{- $_ := set $exporters $id $e }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.collector.traceBackend.headers }}
{{- $headers := dict }}
{{- range $name, $_ := . }}
{{- $_ := set $headers $name (printf "${env:%s}" (include "ragtrace.collector.headerEnv" $name)) }}
{{- end }}
{{- range $id, $_ := (get $base "exporters" | default dict) }}
{{- if regexMatch "^otlp_?http(/.*)?$" $id }}
{{- $_ := set $exporters $id (dict "headers" $headers) }}
{{- end }}
{{- end }}
{{- end }}
{{- if $exporters }}
{{- toYaml (dict "exporters" $exporters) }}
{{- end }}
{{- end }}

{{/* Environment variables collector/config.yaml reads (collector/README.md lists them). */}}
{{- define "ragtrace.collector.env" -}}
{{- $p := .Values.collector.ports }}
- name: RAGTRACE_HEALTH_ENDPOINT
  value: {{ printf "0.0.0.0:%d" (int $p.health) | quote }}
- name: RAGTRACE_APP_OTLP_GRPC_ENDPOINT
  value: {{ printf "0.0.0.0:%d" (int $p.appOtlpGrpc) | quote }}
- name: RAGTRACE_APP_OTLP_HTTP_ENDPOINT
  value: {{ printf "0.0.0.0:%d" (int $p.appOtlpHttp) | quote }}
- name: RAGTRACE_EVAL_OTLP_GRPC_ENDPOINT
  value: {{ printf "0.0.0.0:%d" (int $p.evalOtlpGrpc) | quote }}
- name: RAGTRACE_EVAL_OTLP_HTTP_ENDPOINT
  value: {{ printf "0.0.0.0:%d" (int $p.evalOtlpHttp) | quote }}
- name: RAGTRACE_PROMETHEUS_EXPORTER_ENDPOINT
  value: {{ printf "0.0.0.0:%d" (int $p.prometheus) | quote }}
- name: RAGTRACE_COLLECTOR_METRICS_HOST
  value: "0.0.0.0"
- name: RAGTRACE_COLLECTOR_METRICS_PORT
  value: {{ $p.selfMetrics | int | toString | quote }}
- name: RAGTRACE_COLLECTOR_MEMORY_LIMIT_MIB
  value: {{ .Values.collector.memoryLimitMiB | int | toString | quote }}
- name: RAGTRACE_COLLECTOR_MEMORY_SPIKE_MIB
  value: {{ .Values.collector.memorySpikeMiB | int | toString | quote }}
{{- with include "ragtrace.collector.goMemLimit" . }}
# The Go runtime collects harder as the heap nears this soft limit, before the kernel's OOM kill.
- name: GOMEMLIMIT
  value: {{ . | quote }}
{{- end }}
- name: RAGTRACE_COLLECTOR_LOG_LEVEL
  value: {{ .Values.collector.logLevel | quote }}
- name: RAGTRACE_COLLECTOR_QUEUE_DIR
  value: {{ include "ragtrace.collector.queueDir" . | quote }}
- name: RAGTRACE_COLLECTOR_QUEUE_ITEMS
  value: {{ .Values.collector.persistentQueue.maxItems | int | toString | quote }}
- name: RAGTRACE_COLLECTOR_RETRY_MAX_ELAPSED
  value: {{ .Values.collector.persistentQueue.retryMaxElapsed | quote }}
- name: RAGTRACE_TRACE_BACKEND_ENDPOINT
  value: {{ required "collector.traceBackend.endpoint is required" .Values.collector.traceBackend.endpoint | quote }}
- name: RAGTRACE_KAFKA_BOOTSTRAP_SERVERS
  value: {{ .Values.kafka.bootstrapServers | quote }}
- name: RAGTRACE_KAFKA_TOPIC
  value: {{ .Values.kafka.topic | quote }}
- name: RAGTRACE_KAFKA_MAX_MESSAGE_BYTES
  value: {{ .Values.collector.kafkaMaxMessageBytes | int | toString | quote }}
{{- range $name, $h := .Values.collector.traceBackend.headers }}
{{- include "ragtrace.credentialEnv" (dict "root" $ "env" (include "ragtrace.collector.headerEnv" $name) "cred" $h "key" (printf "trace-backend-header-%s" ($name | lower))) }}
{{- end }}
{{- end }}

{{/* Environment variable carrying one trace-backend header: X-Scope-OrgID -> RAGTRACE_TRACE_BACKEND_HEADER_X_SCOPE_ORGID */}}
{{- define "ragtrace.collector.headerEnv" -}}
{{- printf "RAGTRACE_TRACE_BACKEND_HEADER_%s" (regexReplaceAll "[^A-Za-z0-9]" . "_" | upper) }}
{{- end }}

{{/* Where the exporters' sending queue (file_storage/queue) lives: the claim, or the emptyDir. */}}
{{- define "ragtrace.collector.queueDir" -}}/var/lib/otelcol/queue{{- end }}

{{/* The headless Service that governs the collector StatefulSet (its pods' DNS names). */}}
{{- define "ragtrace.collector.headlessName" -}}
{{- printf "%s-headless" (include "ragtrace.collector.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* collector.resources, with the queue's emptyDir (persistentQueue off) added to the
ephemeral-storage limit: the kubelet counts an emptyDir against the pod's limit and evicts the
pod, queue and all, when the sum is exceeded. */}}
{{- define "ragtrace.collector.resources" -}}
{{- $r := deepCopy (.Values.collector.resources | default dict) }}
{{- $q := .Values.collector.persistentQueue }}
{{- $limit := dig "limits" "ephemeral-storage" "" $r }}
{{- if and (not $q.enabled) $limit }}
{{- $own := include "ragtrace.memoryBytes" (dict "q" $limit "what" "collector.resources.limits.ephemeral-storage") | float64 }}
{{- $queue := include "ragtrace.memoryBytes" (dict "q" $q.size "what" "collector.persistentQueue.size") | float64 }}
{{- $_ := set $r.limits "ephemeral-storage" (printf "%dMi" (divf (addf $own $queue) 1048576 | ceil | int)) }}
{{- end }}
{{- with $r }}
{{- toYaml . }}
{{- end }}
{{- end }}
