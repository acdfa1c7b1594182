#!/usr/bin/env bash
# Installs what the Helm chart's test (test/deploy/helm.test.ts) runs, when missing or of another
# version; idempotent and quick when both are there:
#   - helm: `go install` of Helm 3 from the Go module proxy into Go's bin directory (v3, not v4:
#     the chart is apiVersion v2, which both read, and v3 is what most clusters' tooling runs);
#   - spindle-k8s-validate (deploy/helm/validate/): decodes `helm template` output strictly into
#     Kubernetes' Go types, built with `go build` into ~/.cache/spindle/k8s-validate/ and rebuilt
#     when its source changes (the cache holds the hash of the source it was built from).
# HELM_VERSION overrides the Helm version. Prints the two paths on its last lines:
#   helm=<path>
#   validate=<path>
set -euo pipefail

version=${HELM_VERSION:-v3.22.0}
module=helm.sh/helm/v3

command -v go >/dev/null 2>&1 || { echo "ensure-helm: Go is needed to install helm (not found)" >&2; exit 1; }
bin_dir=$(go env GOBIN)
[ -n "$bin_dir" ] || bin_dir="$(go env GOPATH)/bin"
helm="$bin_dir/helm"
if ! [ -x "$helm" ] || ! go version -m "$helm" 2>/dev/null | grep -qE "^[[:space:]]+mod[[:space:]]+$module[[:space:]]+$version[[:space:]]"; then
  echo "ensure-helm: installing helm $version into $bin_dir" >&2
  go install "$module/cmd/helm@$version"
fi

src="$(cd "$(dirname "$0")/.." && pwd)/deploy/helm/validate"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/spindle/k8s-validate"
validate="$cache/spindle-k8s-validate"
hash=$(cd "$src" && cat go.mod go.sum *.go | sha256sum | cut -d' ' -f1)
if ! [ -x "$validate" ] || [ "$(cat "$cache/source.sha256" 2>/dev/null)" != "$hash" ]; then
  echo "ensure-helm: building spindle-k8s-validate into $cache" >&2
  mkdir -p "$cache"
  (cd "$src" && go build -trimpath -o "$validate.tmp" .)
  mv "$validate.tmp" "$validate"
  echo "$hash" > "$cache/source.sha256"
fi

echo "helm=$helm"
echo "validate=$validate"
