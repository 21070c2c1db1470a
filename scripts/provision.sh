#!/usr/bin/env bash
# Install or build every real service the end-to-end tests and the dev stack run:
#   redis-server, prometheus (+ promtool)  Debian packages (apt-get; needs root)
#   Apache Kafka broker jars               Maven Central, via scripts/kafka/pom.xml
#   otelcol-ragtrace                        built with the Collector Builder from collector/builder-config.yaml
#   helm                                   go install helm.sh/helm/v3/cmd/helm (and kube-score, kubeconform)
#
# Usage: scripts/provision.sh [redis|prometheus|kafka|collector|helm ...]   (default: all)
#
# Idempotent and fast when nothing changed: downloads and builds are cached under
# ${RAGTRACE_CACHE:-$HOME/.cache/ragtrace} (never in the work tree), keyed by the hash of the
# manifest that produced them, so editing pom.xml or builder-config.yaml rebuilds on the next run.
# Layout and conventions: scripts/README.md. The Python side (scripts/services/paths.py) finds
# the same files by the same keys.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${RAGTRACE_CACHE:-$HOME/.cache/ragtrace}"
HELM_VERSION="v3.22.0"
KUBE_SCORE_VERSION="v1.20.0"
KUBECONFORM_VERSION="v0.7.0"
KAFKA_POM="$ROOT/scripts/kafka/pom.xml"
COLLECTOR_MANIFEST="$ROOT/collector/builder-config.yaml"

log() { printf 'provision: %s\n' "$*" >&2; }
die() { printf '\nprovision: ERROR: %s\n\n' "$*" >&2; exit 1; }
key_of() { sha256sum "$1" | cut -c1-16; }   # scripts/services/paths.py: manifest_key()

mkdir -p "$CACHE/bin" "$CACHE/tools"
# Several checkouts (or engineers) may provision at once: one at a time per cache.
exec 9>"$CACHE/.provision.lock"
if ! flock -n 9; then
    log "another provision is running on $CACHE; waiting for it"
    flock 9
fi

# Go downloads and build objects live in the cache too, so a cold cache is truly cold and a warm
# one rebuilds nothing. -modcacherw keeps the module cache deletable.
export GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/build" GOFLAGS="${GOFLAGS:-} -modcacherw"
export CGO_ENABLED=0

# --------------------------------------------------------------------------- Debian packages
apt_updated=0
apt_install() {   # apt_install PKG...: install missing Debian packages, never starting their services
    [ "$(id -u)" -eq 0 ] || die "missing $*; run as root or install them: sudo apt-get install -y $*"
    command -v apt-get >/dev/null || die "missing $* and no apt-get on this machine; install them by hand"
    local pkg
    for pkg in "$@"; do   # `apt-get update` only when the package lists do not know a package
        if [ "$apt_updated" -eq 0 ] && ! apt-cache show "$pkg" >/dev/null 2>&1; then
            log "apt-get update"; apt-get update -q >/dev/null || die "apt-get update failed"; apt_updated=1
        fi
    done
    # We run our own instances on private ports: keep Debian from starting (or failing to start)
    # its system services during the install, unless the machine already has a policy.
    local policy=/usr/sbin/policy-rc.d own_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; own_policy=1
    fi
    log "apt-get install $*"
    local rc=0
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" \
        >"$CACHE/apt-install.log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ] && [ "$apt_updated" -eq 0 ]; then   # stale lists: update once and retry
        log "apt-get install failed; apt-get update and retry"
        apt-get update -q >/dev/null && apt_updated=1
        rc=0; DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" \
            >"$CACHE/apt-install.log" 2>&1 || rc=$?
    fi
    [ "$own_policy" -eq 1 ] && rm -f "$policy"
    [ "$rc" -eq 0 ] || { tail -20 "$CACHE/apt-install.log" >&2; die "apt-get install $* failed (log: $CACHE/apt-install.log)"; }
}

provision_debian() {   # provision_debian COMMAND PACKAGE ...
    local missing=() cmd pkg
    while [ $# -gt 0 ]; do
        cmd=$1 pkg=$2; shift 2
        command -v "$cmd" >/dev/null || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
}

provision_redis() {
    provision_debian redis-server redis-server
    log "redis-server  $(command -v redis-server) ($(redis-server --version | grep -o 'v=[0-9.]*'))"
}

provision_prometheus() {
    provision_debian prometheus prometheus promtool prometheus
    log "prometheus    $(command -v prometheus) ($(prometheus --version 2>&1 | head -1 | grep -o 'version [0-9.]*'))"
}

provision_chromium() {   # headless Chromium and its driver for the web view's browser tests
    provision_debian chromium chromium chromedriver chromium-driver
    log "chromium      $(command -v chromium) ($(chromium --version 2>/dev/null | head -1)), $(command -v chromedriver)"
}

# --------------------------------------------------------------------------- Kafka
java_major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1; }

provision_kafka() {
    local key dir
    key="$(key_of "$KAFKA_POM")"
    dir="$CACHE/kafka/$key"
    provision_debian java openjdk-17-jre-headless
    [ "$(java_major)" -ge 17 ] 2>/dev/null || die "Kafka 4.x needs Java >= 17; java is $(java -version 2>&1 | head -1)"
    if [ ! -f "$dir/.complete" ]; then
        provision_debian mvn maven
        log "Kafka jars: resolving $KAFKA_POM from Maven Central (first run only)"
        rm -rf "$dir"; mkdir -p "$dir"
        cp "$KAFKA_POM" "$dir/pom.xml"   # run Maven there so nothing lands in the work tree
        mvn -B -q -f "$dir/pom.xml" -Dmaven.repo.local="$CACHE/m2" \
            dependency:copy-dependencies -DoutputDirectory="$dir/libs" -DincludeScope=runtime \
            >"$dir/mvn.log" 2>&1 || { tail -30 "$dir/mvn.log" >&2; die "Maven could not resolve Kafka (log: $dir/mvn.log)"; }
        ls "$dir"/libs/kafka_2.13-*.jar >/dev/null 2>&1 || die "no kafka_2.13 jar in $dir/libs"
        touch "$dir/.complete"
    fi
    log "kafka         $dir/libs ($(basename "$(ls "$dir"/libs/kafka_2.13-*.jar | head -1)" .jar), $(ls "$dir/libs" | wc -l) jars)"
}

# --------------------------------------------------------------------------- Go tools
require_go() {
    command -v go >/dev/null || die "Go is not installed (needed to build the collector and helm); install Go >= 1.24"
}

go_tool() {   # go_tool NAME MODULE@VERSION: install once into $CACHE/tools/NAME-VERSION/
    local name=$1 spec=$2 dir="$CACHE/tools/$1-${2##*@}"
    if [ ! -x "$dir/$name" ]; then
        require_go
        log "go install $spec"
        GOBIN="$dir" go install "$spec" >"$CACHE/tools/$name.log" 2>&1 \
            || { tail -30 "$CACHE/tools/$name.log" >&2; die "go install $spec failed (log: $CACHE/tools/$name.log)"; }
    fi
    ln -sfn "$dir/$name" "$CACHE/bin/$name"
    printf '%s\n' "$dir/$name"
}

provision_collector() {
    local key dir core builder work
    key="$(key_of "$COLLECTOR_MANIFEST")"
    dir="$CACHE/collector/$key"
    if [ ! -x "$dir/otelcol-ragtrace" ]; then
        core="$(sed -n 's#.*go.opentelemetry.io/collector/receiver/otlpreceiver \(v[0-9.]*\).*#\1#p' "$COLLECTOR_MANIFEST")"
        [ -n "$core" ] || die "cannot read the core collector version (otlpreceiver line) from $COLLECTOR_MANIFEST"
        builder="$(go_tool builder "go.opentelemetry.io/collector/cmd/builder@$core")"
        work="$CACHE/collector/$key.build"
        rm -rf "$work"; mkdir -p "$work"
        cp "$COLLECTOR_MANIFEST" "$work/builder-config.yaml"
        log "building otelcol-ragtrace $core (first run after a manifest change: several minutes)"
        (cd "$work" && "$builder" --config=builder-config.yaml) >"$work/build.log" 2>&1 \
            || { tail -40 "$work/build.log" >&2; die "collector build failed (log: $work/build.log)"; }
        mkdir -p "$dir"
        mv "$work/_build/otelcol-ragtrace" "$dir/otelcol-ragtrace.tmp"
        cp "$work/build.log" "$dir/build.log"
        rm -rf "$work"
        mv "$dir/otelcol-ragtrace.tmp" "$dir/otelcol-ragtrace"
    fi
    ln -sfn "$dir/otelcol-ragtrace" "$CACHE/bin/otelcol-ragtrace"
    log "collector     $dir/otelcol-ragtrace ($("$dir/otelcol-ragtrace" --version 2>&1 | head -1))"
}

provision_helm() {   # helm, and kube-score and kubeconform for the chart's static checks
    local helm kube_score kubeconform
    helm="$(go_tool helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION")"
    log "helm          $helm ($("$helm" version --short 2>/dev/null))"
    kube_score="$(go_tool kube-score "github.com/zegl/kube-score/cmd/kube-score@$KUBE_SCORE_VERSION")"
    log "kube-score    $kube_score"
    # Its Kubernetes schemas come from the kubernetes-validate wheel of the dev extra
    # (tests/unit/helm/test_helm_kubeconform.py), so nothing is downloaded from outside a registry.
    kubeconform="$(go_tool kubeconform "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION")"
    log "kubeconform   $kubeconform"
}

# --------------------------------------------------------------------------- main
components=("$@")
[ ${#components[@]} -gt 0 ] || components=(redis prometheus kafka collector helm chromium)
start=$SECONDS
log "cache $CACHE"
for c in "${components[@]}"; do
    case "$c" in
        redis|prometheus|kafka|collector|helm|chromium) "provision_$c" ;;
        *) die "unknown component '$c' (choose from: redis prometheus kafka collector helm chromium)" ;;
    esac
done
log "done in $((SECONDS - start)) s"
