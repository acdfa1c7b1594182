{{/* Names and labels shared by the templates. */}}

{{- define "spindle.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's base name: the StatefulSet, the client Service and the pods' prefix. Kept to
52 characters: pod names add "-<ordinal>", and the StatefulSet's controller-revision-hash label
adds 11 to the 63 a label value may hold. */}}
{{- define "spindle.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The headless Service: the StatefulSet's serviceName (pods' DNS names
<pod>.<headless>.<namespace>.svc) and what cluster.discovery.service names. */}}
{{- define "spindle.headless" -}}
{{- printf "%s-headless" (include "spindle.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "spindle.adminSecret" -}}
{{- default (printf "%s-admin" (include "spindle.fullname" .)) .Values.admin.existingSecret }}
{{- end }}

{{- define "spindle.selectorLabels" -}}
app.kubernetes.io/name: {{ include "spindle.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "spindle.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "spindle.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Clustered when there is more than one node. */}}
{{- define "spindle.clustered" -}}
{{- if gt (int .Values.replicas) 1 }}true{{ end }}
{{- end }}

{{/* Seconds the preStop hook waits for the drain. */}}
{{- define "spindle.drainTimeout" -}}
{{- $grace := int .Values.terminationGracePeriodSeconds }}
{{- $t := int .Values.drain.timeoutSeconds }}
{{- if eq $t 0 }}{{ $t = sub $grace 15 }}{{ end }}
{{- if or (lt $t 1) (ge $t $grace) }}
{{- fail (printf "drain: the hook's wait (%d s) must be at least 1 s and below terminationGracePeriodSeconds (%d s), which also has to hold the graceful stop after it" $t $grace) }}
{{- end }}
{{- $t }}
{{- end }}

{{/* Writes every leaf of .src into .dst (maps merged key by key, anything else replaced), so
the chart's keys win over `config` whatever their value: sprig's merge functions skip false, 0
and "" in the source. */}}
{{- define "spindle.overlay" -}}
{{- $dst := .dst }}
{{- range $k, $v := .src }}
{{- if and (kindIs "map" $v) (kindIs "map" (get $dst $k)) }}
{{- include "spindle.overlay" (dict "dst" (get $dst $k) "src" $v) }}
{{- else }}
{{- $_ := set $dst $k $v }}
{{- end }}
{{- end }}
{{- end }}
