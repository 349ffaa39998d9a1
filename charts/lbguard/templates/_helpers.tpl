{{- define "lbguard.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "lbguard.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "lbguard.labels" -}}
{{ include "lbguard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Secret the server reads its certificate from, in every mode. */}}
{{- define "lbguard.tlsSecret" -}}
{{- if eq .Values.certificates.mode "secret" -}}
{{- required "certificates.secret.name is required with certificates.mode=secret" .Values.certificates.secret.name -}}
{{- else -}}
{{- printf "%s-tls" (include "lbguard.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* lbguard's config file: the values' config plus provider and the inventory path. */}}
{{- define "lbguard.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- $_ := set $config "provider" .Values.provider -}}
{{- if .Values.webhook.skipExportedRules -}}
{{- $rules := $config.rules | default dict -}}
{{- range .Values.webhook.skipExportedRules -}}
{{- $_ := set $rules . "off" -}}
{{- end -}}
{{- $_ := set $config "rules" $rules -}}
{{- end -}}
{{- if .Values.vap.defaults -}}
{{- $_ := set $config.defaults "exported" true -}}
{{- end -}}
{{- if .Values.inventory.enabled -}}
{{- $_ := set $config.inventory "path" "/etc/lbguard/inventory/inventory.yaml" -}}
{{- end -}}
{{- if and .Values.inventory.cloud.enabled (eq (toString .Values.provider) "auto") -}}
{{- fail "inventory.cloud.enabled needs provider set to ctyun, alibaba, huawei or volcengine: lbguard must know which cloud to ask" -}}
{{- end -}}
{{- if .Values.inventory.cloud.enabled -}}
{{- $c := .Values.inventory.cloud.credentials -}}
{{- if and .Values.inventory.cloud.existingSecret (not (has $c.source (list "auto" "static"))) -}}
{{- fail (printf "inventory.cloud.existingSecret holds an access key, but inventory.cloud.credentials.source is %s: unset one of them" $c.source) -}}
{{- end -}}
{{- if and (eq $c.source "static") (not .Values.inventory.cloud.existingSecret) -}}
{{- fail "inventory.cloud.credentials.source static needs inventory.cloud.existingSecret: name the Secret holding accessKeyId and accessKeySecret (see the book's inventory page)" -}}
{{- end -}}
{{- if and (eq (toString .Values.provider) "ctyun") (not .Values.inventory.cloud.existingSecret) -}}
{{- fail "inventory.cloud on CTyun needs inventory.cloud.existingSecret: CTyun's SDK offers only an access key" -}}
{{- end -}}
{{- if and $c.ackRoleName (ne (toString .Values.provider) "alibaba") -}}
{{- fail "inventory.cloud.credentials.ackRoleName is for ACK RRSA: set provider alibaba, or use serviceAccount.annotations" -}}
{{- end -}}
{{- if and $c.ackRoleName $c.projectedToken.audience -}}
{{- fail "inventory.cloud.credentials: ackRoleName (the webhook injects the token) and projectedToken.audience (the chart mounts one) exclude each other" -}}
{{- end -}}
{{- $cloudMs := include "lbguard.millis" .Values.inventory.cloud.timeout | atoi -}}
{{- $claimsMs := 0 -}}
{{- if .Values.config.claims.enabled -}}{{- $claimsMs = include "lbguard.millis" .Values.config.claims.timeout | atoi -}}{{- end -}}
{{- $webhookMs := mul (int .Values.webhook.timeoutSeconds) 1000 -}}
{{- if gt (add $cloudMs $claimsMs 1000) $webhookMs -}}
{{- fail (printf "inventory.cloud.timeout (%dms) + config.claims.timeout (%dms) + 1s of margin does not fit in webhook.timeoutSeconds (%ds): lower the timeouts or raise webhook.timeoutSeconds (at most 30)" $cloudMs $claimsMs (int .Values.webhook.timeoutSeconds)) -}}
{{- end -}}
{{- end -}}
{{- with .Values.inventory.cloud -}}
{{- if .enabled -}}
{{- $cloud := omit . "existingSecret" "credentials" "caBundle" -}}
{{- if .existingSecret -}}
{{- $_ := set $cloud "credentialsDir" "/etc/lbguard/cloud" -}}
{{- end -}}
{{- $ca := .caBundle | default dict -}}
{{- if $ca.configMap -}}
{{- $_ := set $cloud "caFile" (printf "/etc/lbguard/cloud-ca/%s" ($ca.key | default "ca.crt")) -}}
{{- end -}}
{{- $_ := set $cloud "credentials" (pick .credentials "source" "stsEndpoint" "iamEndpoint" "metadataEndpoint") -}}
{{- $_ := set $config.inventory "cloud" $cloud -}}
{{- end -}}
{{- end -}}
{{ toYaml $config }}
{{- end -}}

{{- define "lbguard.inventory" -}}
{{ toYaml (dict "loadBalancers" .Values.inventory.loadBalancers) }}
{{- end -}}

{{- /*
  "true" when some default of config.defaults other than the inventory's can apply (the ones
  lbguard export-vap writes as a MutatingAdmissionPolicy).
*/}}
{{- define "lbguard.configDefaults" -}}
{{- $d := .Values.config.defaults -}}
{{- if and $d.enabled (or $d.volcengineWeight $d.huaweiElbClass $d.ctyunIpModeProxy $d.annotations (and $d.huaweiTurboClusterPolicy (eq .Values.config.cluster.flavor "turbo"))) -}}true{{- end -}}
{{- end -}}

{{- /*
  "true" when the MutatingWebhookConfiguration is rendered: webhook.mutate always, or auto and
  some default of config.defaults can apply (the cases engine::mutate handles); with
  vap.defaults the API server applies the config's, so only the inventory's count. Otherwise
  every Service write would pay for a webhook call that never changes anything.
*/}}
{{- define "lbguard.mutates" -}}
{{- $d := .Values.config.defaults -}}
{{- $mode := .Values.webhook.mutate -}}
{{- $config := and (include "lbguard.configDefaults" .) (not .Values.vap.defaults) -}}
{{- if eq $mode "always" -}}true
{{- else if and (eq $mode "auto") $d.enabled (or .Values.inventory.enabled .Values.inventory.cloud.enabled $config) -}}true
{{- end -}}
{{- end -}}

{{- /*
  Namespaces the webhooks are never called for; the policy binding of vap.defaults skips them
  and the config's exempt namespaces too, as the webhook does.
*/}}
{{- define "lbguard.namespaceSelector" -}}
{{- $ns := concat (list "kube-system" "kube-node-lease" .root.Release.Namespace) .root.Values.webhook.excludeNamespaces .extra -}}
{{- toYaml (dict "matchExpressions" (list (dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" (uniq $ns)))) -}}
{{- end -}}

{{- /* A config duration ("5m", "90s", "1500ms", or plain seconds) in whole seconds. */}}
{{- define "lbguard.millis" -}}
{{- $v := toString . -}}
{{- if hasSuffix "ms" $v -}}{{ trimSuffix "ms" $v | atoi }}
{{- else if hasSuffix "m" $v -}}{{ mul (trimSuffix "m" $v | atoi) 60000 }}
{{- else if hasSuffix "s" $v -}}{{ mul (trimSuffix "s" $v | atoi) 1000 }}
{{- else -}}{{ mul (atoi $v) 1000 }}
{{- end -}}
{{- end -}}

{{- define "lbguard.seconds" -}}
{{- $v := toString . -}}
{{- if hasSuffix "ms" $v -}}{{ div (trimSuffix "ms" $v | atoi) 1000 }}
{{- else if hasSuffix "m" $v -}}{{ mul (trimSuffix "m" $v | atoi) 60 }}
{{- else if hasSuffix "s" $v -}}{{ trimSuffix "s" $v | atoi }}
{{- else -}}{{ atoi $v }}
{{- end -}}
{{- end -}}


{{/* The provider's variable naming an OIDC token file (the SDK's own name). */}}
{{- define "lbguard.tokenFileEnv" -}}
{{- $p := toString .Values.provider -}}
{{- if eq $p "alibaba" -}}ALIBABA_CLOUD_OIDC_TOKEN_FILE
{{- else if eq $p "huawei" -}}HUAWEICLOUD_OIDC_TOKEN_FILE
{{- else if eq $p "volcengine" -}}VOLCENGINE_OIDC_TOKEN_FILE
{{- else -}}{{- fail "inventory.cloud.credentials.projectedToken: CTyun's SDK offers only an access key" -}}
{{- end -}}
{{- end -}}

{{/*
The Services lbguard checks, as CEL for the webhooks' matchConditions: neither object a
LoadBalancer, or one that a controller of the provider serves (spec.loadBalancerClass, and
ACK's class and tunnel annotations; ACK's NLB class, VKE's published controller's class).
The same text as `lbguard export-vap`'s
served-by-provider condition (src/vap/route.rs); tests/chart/ compares them.
*/}}
{{- define "lbguard.ours" -}}
{{- $p := toString .Values.provider -}}
{{- $providers := list $p -}}
{{- if eq $p "auto" -}}{{- $providers = list "ctyun" "alibaba" "huawei" "volcengine" -}}{{- end -}}
{{- $classes := .Values.config.loadBalancerClasses | default dict -}}
{{- $lb := dict -}}
{{- $served := dict -}}
{{- range $v := list "object" "oldObject" -}}
{{- $isLb := printf "(%s != null && (has(%s.spec) && has(%s.spec.type) && %s.spec.type == 'LoadBalancer'))" $v $v $v $v -}}
{{- $_ := set $lb $v $isLb -}}
{{- $any := list -}}
{{- range $prov := $providers -}}
{{- $names := list -}}
{{- range $k := keys $classes | sortAlpha -}}
{{- if or (eq (get $classes $k) "default") (eq $prov "alibaba") -}}{{- $names = append $names (printf "'%s'" $k) -}}{{- end -}}
{{- end -}}
{{- $unset := "true" -}}
{{- if eq $prov "volcengine" -}}
{{- $names = append $names "'volcengine.com/clb'" -}}
{{- end -}}
{{- if eq $prov "alibaba" -}}
{{- $names = append $names "'alibabacloud.com/nlb'" -}}
{{- $unset = printf "!(has(%s.metadata.annotations) && (('service.beta.kubernetes.io/class' in %s.metadata.annotations && %s.metadata.annotations['service.beta.kubernetes.io/class'] != '') || 'service.beta.kubernetes.io/alibaba-cloud-loadbalancer-tunnel-type' in %s.metadata.annotations))" $v $v $v $v -}}
{{- end -}}
{{- $any = append $any (printf "(has(%s.spec.loadBalancerClass) ? %s.spec.loadBalancerClass in [%s] : %s)" $v $v (join ", " $names) $unset) -}}
{{- end -}}
{{- $_ := set $served $v (printf "(%s && (%s))" $isLb (join " || " $any)) -}}
{{- end -}}
{{- printf "(!%s && !%s) || %s || %s" $lb.object $lb.oldObject $served.object $served.oldObject -}}
{{- end -}}
