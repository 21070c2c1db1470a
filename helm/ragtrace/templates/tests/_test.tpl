{{/* A `helm test` pod running one Python snippet in the consumer image (it has Python and
nothing else is needed): include "ragtrace.testPod" (dict "root" $ "name" "x" "script" "...") */}}
{{- define "ragtrace.testPod" -}}
{{- $root := .root }}
apiVersion: v1
kind: Pod
metadata:
  name: {{ printf "%s-test-%s" (include "ragtrace.fullname" $root) .name | trunc 63 | trimSuffix "-" }}
  labels:
    {{- include "ragtrace.componentLabels" (dict "root" $root "component" "test") | nindent 4 }}
  annotations:
    helm.sh/hook: test
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
    # A short-lived client that only connects out: no NetworkPolicy selects it.
    kube-score/ignore: pod-networkpolicy
spec:
  restartPolicy: Never
  serviceAccountName: {{ include "ragtrace.serviceAccountName" $root }}
  automountServiceAccountToken: false
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.consumer.podSecurityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: {{ .name }}
      image: {{ include "ragtrace.image" (dict "root" $root "image" $root.Values.consumer.image) | quote }}
      imagePullPolicy: {{ $root.Values.consumer.image.pullPolicy }}
      command: ["python", "-c"]
      args:
        - |
          {{- .script | nindent 10 }}
      resources:
        requests:
          cpu: 10m
          memory: 32Mi
          ephemeral-storage: 1Mi
        limits:
          memory: 64Mi
          ephemeral-storage: 16Mi
      {{- with $root.Values.consumer.securityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
