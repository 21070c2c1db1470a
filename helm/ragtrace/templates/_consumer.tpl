{{/*
The consumer's configuration file: the keys of consumers/ragtrace_consumers/config/ragtrace-consumer.yaml. Tuning keys come
from .Values.consumer.config; connection keys from the chart's top-level values, which win.
*/}}
{{- define "ragtrace.consumer.configFile" -}}
{{- $cfg := deepCopy .Values.consumer.config }}
{{- $kafka := get $cfg "kafka" | default dict }}
{{- $_ := set $kafka "bootstrap_servers" .Values.kafka.bootstrapServers }}
{{- $_ := set $kafka "topic" .Values.kafka.topic }}
{{- $_ := set $kafka "group_id" .Values.kafka.groupId }}
{{- $_ := set $kafka "dlq_topic" .Values.kafka.dlqTopic }}
{{- $_ := set $cfg "kafka" $kafka }}
{{- $redis := get $cfg "redis" | default dict }}
{{- $_ := set $redis "url" .Values.redis.url }}
{{- $_ := set $cfg "redis" $redis }}
{{- $export := get $cfg "export" | default dict }}
{{- $_ := set $export "otlp_endpoint" (include "ragtrace.consumer.otlpEndpoint" .) }}
{{- /* Scraped directly: pushing the same metrics through the collector would count them twice. */}}
{{- $_ := set $export "metrics_otlp" (not (include "ragtrace.consumer.scraped" .)) }}
{{- $_ := set $cfg "export" $export }}
{{- $judge := get $cfg "judge" | default dict }}
{{- $_ := set $judge "name" .Values.judge.name }}
{{- $_ := set $judge "model" (.Values.judge.model | default nil) }}
{{- $_ := set $cfg "judge" $judge }}
{{- $health := get $cfg "health" | default dict }}
{{- $_ := set $health "enabled" .Values.consumer.health.enabled }}
{{- $_ := set $health "host" "0.0.0.0" }}
{{- $_ := set $health "port" (int .Values.consumer.health.port) }}
{{- $_ := set $cfg "health" $health }}
{{- toYaml $cfg }}
{{- end }}

{{/* Where the consumers send evaluation spans and metrics: the chart's collector unless overridden. */}}
{{- define "ragtrace.consumer.otlpEndpoint" -}}
{{- if .Values.consumer.otlpEndpoint }}
{{- .Values.consumer.otlpEndpoint }}
{{- else if .Values.collector.enabled }}
{{- printf "http://%s:%d" (include "ragtrace.collector.fullname" .) (int .Values.collector.ports.evalOtlpHttp) }}
{{- else }}
{{- fail "consumer.otlpEndpoint is required when collector.enabled is false" }}
{{- end }}
{{- end }}

{{/*
Redis URL for the RAGTRACE_REDIS_URL environment variable (read by `ragtrace consume`, over its
config file, and by `ragtrace labels load`): redis.url, or a redis+sentinel:// URL made of
redis.sentinel when its hosts are set; the user name at most, never the password, which
goes to the client apart (RAGTRACE_REDIS_PASSWORD, from a Secret), so no error or log line that
prints the URL can carry it.
*/}}
{{- define "ragtrace.consumer.redisUrl" -}}
{{- $url := .Values.redis.url }}
{{- with .Values.redis.sentinel }}
{{- if .hosts }}
{{- $primary := required "redis.sentinel.primaryName is required with redis.sentinel.hosts" .primaryName }}
{{- $scheme := ternary "rediss+sentinel://" "redis+sentinel://" (ne $.Values.redis.tls.existingSecret "") }}
{{- $url = printf "%s%s/%s/%d" $scheme (join "," .hosts) $primary (int (.db | default 0)) }}
{{- end }}
{{- end }}
{{- if .Values.redis.username }}
{{- $scheme := regexFind "^[a-z+]+://" $url }}
{{- $url = printf "%s%s@%s" $scheme .Values.redis.username (trimPrefix $scheme $url) }}
{{- end }}
{{- if .Values.redis.tls.existingSecret }}
{{- $sep := ternary "&" "?" (contains "?" $url) }}
{{- $url = printf "%s%sssl_ca_certs=%s/%s" $url $sep (include "ragtrace.redisTlsDir" .) .Values.redis.tls.caKey }}
{{- end }}
{{- $url }}
{{- end }}

{{/* Environment of every container running ragtrace (the consumers and the labels Job). */}}
{{- define "ragtrace.consumer.env" -}}
- name: RAGTRACE_CONSUMER_CONFIG
  value: /etc/ragtrace/ragtrace-consumer.yaml
{{- if .Values.redis.urlSecret.existingSecret }}
- name: RAGTRACE_REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.urlSecret.existingSecret }}
      key: {{ .Values.redis.urlSecret.existingSecretKey }}
{{- else }}
{{- include "ragtrace.credentialEnv" (dict "root" . "env" "RAGTRACE_REDIS_PASSWORD" "cred" .Values.redis.password "key" "redis-password") }}
- name: RAGTRACE_REDIS_URL
  value: {{ include "ragtrace.consumer.redisUrl" . | quote }}
{{- end }}
- name: RAGTRACE_REDIS_KEY_PREFIX
  value: {{ .Values.consumer.config.redis.key_prefix | default "ragtrace" | quote }}
{{- if .Values.kafka.tls.enabled }}
- name: RAGTRACE_KAFKA_SECURITY_PROTOCOL
  value: {{ ternary "SASL_SSL" "SSL" .Values.kafka.sasl.enabled }}
{{- if .Values.kafka.tls.existingSecret }}
- name: RAGTRACE_KAFKA_SSL_CAFILE
  value: {{ printf "%s/%s" (include "ragtrace.kafkaTlsDir" .) .Values.kafka.tls.caKey }}
{{- if and .Values.kafka.tls.certKey .Values.kafka.tls.keyKey }}
- name: RAGTRACE_KAFKA_SSL_CERTFILE
  value: {{ printf "%s/%s" (include "ragtrace.kafkaTlsDir" .) .Values.kafka.tls.certKey }}
- name: RAGTRACE_KAFKA_SSL_KEYFILE
  value: {{ printf "%s/%s" (include "ragtrace.kafkaTlsDir" .) .Values.kafka.tls.keyKey }}
{{- end }}
{{- end }}
- name: RAGTRACE_KAFKA_SSL_CHECK_HOSTNAME
  value: {{ (not .Values.kafka.tls.insecureSkipVerify) | quote }}
{{- else if .Values.kafka.sasl.enabled }}
- name: RAGTRACE_KAFKA_SECURITY_PROTOCOL
  value: SASL_PLAINTEXT
{{- end }}
{{- if .Values.kafka.sasl.enabled }}
- name: RAGTRACE_KAFKA_SASL_MECHANISM
  value: {{ .Values.kafka.sasl.mechanism | quote }}
- name: RAGTRACE_KAFKA_SASL_USERNAME
  value: {{ required "kafka.sasl.username is required when kafka.sasl.enabled" .Values.kafka.sasl.username | quote }}
{{- include "ragtrace.credentialEnv" (dict "root" . "env" "RAGTRACE_KAFKA_SASL_PASSWORD" "cred" .Values.kafka.sasl.password "key" "kafka-sasl-password") }}
{{- end }}
{{- include "ragtrace.credentialEnv" (dict "root" . "env" "ANTHROPIC_API_KEY" "cred" .Values.judge.anthropic.apiKey "key" "anthropic-api-key") }}
{{- with .Values.judge.anthropic.baseUrl }}
- name: ANTHROPIC_BASE_URL
  value: {{ . | quote }}
{{- end }}
{{- with .Values.consumer.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Volumes shared by the consumer pods and the labels Job. */}}
{{- define "ragtrace.consumer.volumes" -}}
- name: config
  configMap:
    name: {{ include "ragtrace.consumer.fullname" . }}
- name: tmp
  emptyDir: {}
{{- if and .Values.kafka.tls.enabled .Values.kafka.tls.existingSecret }}
- name: kafka-tls
  secret:
    secretName: {{ .Values.kafka.tls.existingSecret }}
{{- end }}
{{- if .Values.redis.tls.existingSecret }}
- name: redis-tls
  secret:
    secretName: {{ .Values.redis.tls.existingSecret }}
{{- end }}
{{- end }}

{{- define "ragtrace.consumer.volumeMounts" -}}
- name: config
  mountPath: /etc/ragtrace
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- if and .Values.kafka.tls.enabled .Values.kafka.tls.existingSecret }}
- name: kafka-tls
  mountPath: {{ include "ragtrace.kafkaTlsDir" . }}
  readOnly: true
{{- end }}
{{- if .Values.redis.tls.existingSecret }}
- name: redis-tls
  mountPath: {{ include "ragtrace.redisTlsDir" . }}
  readOnly: true
{{- end }}
{{- end }}

{{/* Checksum of everything a consumer reads at start: a change restarts the pods. */}}
{{- define "ragtrace.consumer.checksum" -}}
{{- printf "%s\n%s" (include "ragtrace.consumer.configFile" .) (include "ragtrace.inlineCredentials" .) | sha256sum }}
{{- end }}

{{/* Probes of the consumer container (see consumer.livenessProbe / readinessProbe). A probe on
the "health" port needs consumer.health.enabled: refuse it rather than render a probe that always
fails. */}}
{{- define "ragtrace.consumer.probes" -}}
{{- if not .Values.consumer.health.enabled }}
{{- range $name := list "livenessProbe" "readinessProbe" "startupProbe" }}
{{- $probe := get $.Values.consumer $name | default dict }}
{{- if eq (toString (dig "httpGet" "port" "" $probe)) "health" }}
{{- fail (printf "consumer.%s probes the health port but consumer.health.enabled is false: set consumer.%s to null or enable health" $name $name) }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.consumer.livenessProbe }}
livenessProbe:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.consumer.readinessProbe }}
readinessProbe:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.consumer.startupProbe }}
startupProbe:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* "true" when Prometheus scrapes the consumer pods' /metrics (consumer.metrics.scrape needs the
health server, which serves it). */}}
{{- define "ragtrace.consumer.scraped" -}}
{{- if and .Values.consumer.metrics.scrape .Values.consumer.health.enabled }}true{{- end }}
{{- end }}
