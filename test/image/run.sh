#!/usr/bin/env bash
# run.sh -- CI's test of the container image (.ci/run runs it after the unit tests): builds
# the Dockerfile with podman from a Debian base made here from Debian's packages (no Docker
# engine, no registry), then runs the image as the README and as the Deployment say, and prints
# one PASS or FAIL line per check and a summary. test/image/README.md says what it checks.
#
#   test/image/run.sh
#
# Root on Debian: installs podman, mmdebstrap, runc (and openssl, curl, binutils) with apt-get
# when missing. Idempotent: the base (localhost/debian:bookworm and :bookworm-slim) and podman's
# layer cache are kept for the next run; containers, the control plane and temporary files are
# removed. Everything listens on 127.0.0.1 (host network). Environment:
#   GPUPACK_K8S         the control-plane kit for the Deployment checks (default ../shared/k8s;
#                       without one they FAIL under CI=true, else are skipped)
#   IMAGE_CI_TIMEOUT    seconds for the whole run (default 600); then it stops and FAILs
#   IMAGE_CI_NEW_BASE=1 make the Debian base again even if podman has one
#   IMAGE_CI_KEEP=1     keep the temporary directory (logs, certificates)
set -uo pipefail
export no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$SELF")/../.." || exit 1
ROOT=$PWD

# Bounded: the whole run lives under timeout(1); the trap below cleans up when it fires.
if [ -z "${IMAGE_CI_INNER:-}" ]; then
    IMAGE_CI_INNER=1 timeout --kill-after=20 "${IMAGE_CI_TIMEOUT:-600}" bash "$SELF" "$@"
    rc=$?
    [ $rc = 124 ] && echo "FAIL image: the run took more than ${IMAGE_CI_TIMEOUT:-600} s and was stopped"
    exit $rc
fi

IMG=gpupack:test
START=$SECONDS
PASSED=0
FAILED=0
T=$(mktemp -d /tmp/gpupack-image-XXXXXX)
CP=""           # the control plane's directory, while one runs
KIT=""
# What this sandbox needs from podman: runc (crun fails here on cgroups) and rlimits no higher
# than the caller's (podman's defaults, nofile and nproc 1048576, are refused).
NOFILE=$(ulimit -Hn)
[ "$NOFILE" = unlimited ] || [ "$NOFILE" -gt 65536 ] && NOFILE=65536
RUN=(podman run --runtime runc --ulimit "nofile=$NOFILE:$NOFILE" --ulimit nproc=4096:4096)
CONTAINERS=(gpupack-ci-readme gpupack-ci-deploy)

pass() { PASSED=$((PASSED + 1)); echo "PASS image: $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL image: $*"; }
check() {  # check DESCRIPTION COMMAND...: PASS when the command succeeds
    local what=$1; shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}
say() { echo "== image [$((SECONDS - START)) s] $*"; }

cleanup() {
    local c
    for c in "${CONTAINERS[@]}"; do podman rm -f -t 2 "$c" >/dev/null 2>&1; done
    [ -n "$CP" ] && "$KIT/kube-down" "$CP" >/dev/null 2>&1
    podman image unmount "$IMG" >/dev/null 2>&1
    if [ "$FAILED" -gt 0 ] || [ -n "${IMAGE_CI_KEEP:-}" ]; then echo "image: kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'fail "stopped by a signal"; exit 124' TERM INT

# Finishes the run: the summary line and the exit code.
finish() {
    echo "image: $PASSED passed, $FAILED failed ($((SECONDS - START)) s)"
    [ "$FAILED" = 0 ]
    exit $?
}

# until_ok SECONDS COMMAND...: retries the command every 0.3 s until it succeeds or time is up
until_ok() {
    local end=$((SECONDS + $1)); shift
    until "$@"; do
        [ $SECONDS -ge $end ] && return 1
        sleep 0.3
    done
}

# http_status URL CURL_ARGS...: the HTTP status (000 when no answer) into $STATUS, body into $T/body
http_status() {
    local url=$1; shift
    STATUS=$(curl -s -o "$T/body" -w '%{http_code}' --max-time 5 --noproxy '*' "$@" "$url") || true
}

# --- 1. tools ------------------------------------------------------------------------------
say "tools"
need=""
for t in podman mmdebstrap runc openssl curl readelf; do
    command -v $t >/dev/null 2>&1 || need="$need $([ $t = readelf ] && echo binutils || echo $t)"
done
if [ -n "$need" ]; then
    if [ "$(id -u)" != 0 ]; then fail "missing:$need (run as root to install them)"; finish; fi
    echo "image: apt-get install$need"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >"$T/apt.log" 2>&1; } ||
        { tail -20 "$T/apt.log"; fail "apt-get install$need"; finish; }
fi
podman --version

# --- 2. the Debian base the Dockerfile names ----------------------------------------------------
# One tree for both tags: apt, no documentation (as Debian's slim images), merged /usr, from the
# machine's own Debian sources. A reused base is not refreshed (IMAGE_CI_NEW_BASE=1 does).
if [ -z "${IMAGE_CI_NEW_BASE:-}" ] && podman image exists debian:bookworm-slim &&
   podman image exists debian:bookworm; then
    say "base: reusing $(podman image inspect --format '{{.Id}}' debian:bookworm-slim | cut -c1-12)"
else
    say "base: mmdebstrap bookworm"
    src=""
    for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
        [ -s "$f" ] && { src=$f; break; }
    done
    [ -n "$src" ] || { fail "no Debian apt sources on this machine for mmdebstrap"; finish; }
    tmp=/dev/shm
    [ -w "$tmp" ] || tmp=$T
    if ! TMPDIR=$tmp timeout 300 mmdebstrap --variant=apt --mode=root --dpkgopt=force-unsafe-io \
            --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
            --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
            --dpkgopt='path-include=/usr/share/doc/*/copyright' \
            --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
            bookworm "$T/base.tar" "$src" >"$T/mmdebstrap.log" 2>&1; then
        tail -20 "$T/mmdebstrap.log"; fail "mmdebstrap bookworm"; finish
    fi
    podman import "$T/base.tar" debian:bookworm-slim >/dev/null &&
        podman tag debian:bookworm-slim debian:bookworm &&
        rm -f "$T/base.tar" || { fail "podman import of the base"; finish; }
    say "base: made"
fi

# --- 3. make image ---------------------------------------------------------------------------
say "make image"
b0=$SECONDS
if timeout 420 make --no-print-directory image IMAGE=$IMG IMAGE_ENGINE=podman \
        IMAGE_BUILD_FLAGS="--pull=never --isolation=chroot --network=host" >"$T/build.log" 2>&1; then
    pass "make image built $IMG in $((SECONDS - b0)) s"
else
    tail -30 "$T/build.log"; fail "make image (log: $T/build.log)"; finish
fi

# --- 4. what the image holds ---------------------------------------------------------------------
commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
tag=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null | sed 's/^v//')
version=$(timeout 30 "${RUN[@]}" --rm --network none $IMG --version 2>&1)
if [ -n "$tag" ]; then want="gpupack $tag"; else want="+g$commit"; fi
check "--version shows the commit: '$version' (want '$want')" \
    bash -c '[[ "$1" == "gpupack "* && "$1" == *"$2" ]]' - "$version" "$want"
check "label org.opencontainers.image.revision is $commit" \
    test "$(podman image inspect --format '{{index .Config.Labels "org.opencontainers.image.revision"}}' $IMG)" = "$commit"
check "runs as 65532:65532, exposes 8765 and 8443" \
    test "$(podman image inspect --format '{{.Config.User}} {{json .Config.ExposedPorts}}' $IMG)" = \
         '65532:65532 {"8443/tcp":{},"8765/tcp":{}}'

m=$(podman image mount $IMG)
policies_match() {
    local f n=0
    for f in policies/*.yaml; do cmp -s "$f" "$m/etc/gpupack/policies/${f#policies/}" || return 1; n=$((n + 1)); done
    [ "$(find "$m/etc/gpupack/policies" -type f | wc -l)" = $n ]
}
check "every shipped policy is in /etc/gpupack/policies ($(ls policies/*.yaml | wc -l) files)" policies_match
check "the example cluster is in /usr/share/gpupack/examples" cmp -s examples/cluster.yaml "$m/usr/share/gpupack/examples/cluster.yaml"
check "no apt lists or caches left in the image" \
    test -z "$(find "$m/var/lib/apt/lists" "$m/var/cache/apt" -type f ! -name lock 2>/dev/null)"
check "the binary is stripped" bash -c '! readelf -S "$1" | grep -q -e "\.symtab" -e "\.debug_"' - "$m/usr/local/bin/gpupack"
sbom_ok() {
    cmp -s build/sbom.txt "$m/usr/share/doc/gpupack/sbom.txt" &&
    grep -q "^version	$version\$" build/sbom.txt &&
    grep -q "^libcurl.so.4	.*	libcurl4:amd64	" build/sbom.txt &&
    grep -q "^libmicrohttpd.so.12	.*	libmicrohttpd12:amd64	" build/sbom.txt
}
check "the SBOM is in the image and in build/sbom.txt, with the version, the libraries' packages and dpkg's list" sbom_ok
podman image unmount $IMG >/dev/null

# --- 5. the README's docker run line and its example ------------------------------------------------
port_free() { ! curl -s --max-time 2 --noproxy '*' -o /dev/null "http://127.0.0.1:$1/" 2>/dev/null; }
say "the README's example"
line=$(grep -m1 '^docker run ' README.md || true)
if [ -z "$line" ]; then
    fail "README.md has no line starting with 'docker run '"
elif ! port_free 8765; then
    fail "something already listens on 127.0.0.1:8765: the README's example needs it"
else
    echo "image: README: $line"
    # the README's line, with podman for docker and this image's tag, detached
    run=${line#docker run }
    run=${run//gpupack:latest/$IMG}
    # shellcheck disable=SC2086  # the README's words, split as a shell would (no quoting there)
    if "${RUN[@]}" -d --name gpupack-ci-readme $run >"$T/readme-run.log" 2>&1 &&
       until_ok 20 curl -sf --max-time 2 --noproxy '*' -o /dev/null http://127.0.0.1:8765/healthz; then
        pass "the README's docker run line serves the example cluster on 127.0.0.1:8765"
        # every "$ curl ..." line of the README and the line it prints
        n=0
        while IFS= read -r cmd && IFS= read -r expect; do
            got=$(cd "$ROOT" && timeout 10 bash -c "${cmd#\$ }" 2>&1)
            n=$((n + 1))
            if [ "$got" = "$expect" ]; then pass "README: ${cmd#\$ }"
            else fail "README: ${cmd#\$ }"; echo "  README:  $expect"; echo "  image:   $got"; fi
        done < <(grep -A1 '^\$ curl ' README.md | grep -v '^--$')
        [ $n -gt 0 ] || fail "README.md has no '\$ curl' lines to compare"
        # the README's inspect table: each row it prints (not '...') is in the image's answer
        "${RUN[@]}" --rm --network host $IMG inspect --server http://127.0.0.1:8765 2>&1 |
            sed 's/[[:space:]]*$//' >"$T/inspect.txt"
        rows=$(sed -n '/^\$ bin\/gpupack inspect/,/^```/p' README.md | sed '1d;$d' | grep -v '^\.\.\.$')
        missing=$(grep -vxF -f "$T/inspect.txt" <<<"$rows" || true)
        if [ -n "$rows" ] && [ -z "$missing" ]; then
            pass "README: gpupack inspect shows the README's $(wc -l <<<"$rows") rows"
        else
            fail "README: gpupack inspect: rows missing from the image's answer:"; echo "$missing"
            cat "$T/inspect.txt"
        fi
    else
        fail "the README's docker run line: nothing answers on 127.0.0.1:8765"
        cat "$T/readme-run.log"; podman logs gpupack-ci-readme 2>&1 | tail -20
    fi
    podman rm -f -t 5 gpupack-ci-readme >/dev/null 2>&1
fi

# --- 6. the Deployment's args, mounts, securityContext and probes against a real API server ----------
KIT=${GPUPACK_K8S:-../shared/k8s}
if [ ! -x "$KIT/kube-up" ]; then
    if [ "${CI:-}" = true ]; then fail "no control-plane kit at $KIT (GPUPACK_K8S)"
    else echo "image: SKIP the Deployment checks: no control-plane kit at $KIT (GPUPACK_K8S)"; fi
    finish
fi
KIT=$(cd "$KIT" && pwd)
say "the Deployment: control plane (kube-up, v1.36)"
if ! K8S_VERSION=1.36 timeout 120 "$KIT/kube-up" "$T/cp" >"$T/kube-up.log" 2>&1; then
    cat "$T/kube-up.log"; fail "kube-up"; finish
fi
CP=$T/cp
# shellcheck disable=SC1091
. "$CP/env"
K() { timeout 30 "$K8S_KUBECTL" "$@"; }
NS=gpupack-system
POD=gpupack-ci
dep=manifests/base/deployment.yaml
c0='(index .spec.template.spec.containers 0)'
render() { K create --dry-run=client -f "$dep" -o go-template="$1"; }
{
    K apply -f manifests/base/namespace.yaml &&
    K -n $NS create serviceaccount gpupack &&
    # the Pod that --leader-elect-pod names, for the leader label (no kubelet runs it)
    K -n $NS run $POD --image=$IMG --restart=Never --labels=app.kubernetes.io/name=gpupack &&
    mkdir -p "$T/sa" "$T/tls" "$T/webhook-tls" &&
    K -n $NS create token gpupack --duration=1h >"$T/sa/token" &&
    cp "$K8S_CA" "$T/sa/ca.crt" && echo $NS >"$T/sa/namespace" &&
    scripts/gen-certs.sh "$T/mtls" >/dev/null &&
    cp "$T/mtls/server.crt" "$T/tls/tls.crt" && cp "$T/mtls/server.key" "$T/tls/tls.key" &&
    cp "$T/mtls/ca.crt" "$T/tls/ca.crt" &&
    scripts/webhook-certs.sh "$T/wh" >/dev/null 2>&1 &&
    cp "$T/wh/tls.crt" "$T/wh/tls.key" "$T/webhook-tls/" &&
    scripts/gen-certs.sh "$T/stranger" >/dev/null &&       # a client certificate of another CA
    chmod -R a+rX "$T/sa" "$T/tls" "$T/webhook-tls" &&     # as kubelet mounts Secrets (0644)
    render "{{range $c0.args}}{{.}}{{\"\\n\"}}{{end}}" >"$T/args" &&
    render "{{range $c0.volumeMounts}}{{.name}} {{.mountPath}} {{.readOnly}}{{\"\\n\"}}{{end}}" >"$T/mounts" &&
    render "{{with .spec.template.spec.securityContext}}{{.runAsUser}}:{{.runAsGroup}} {{.runAsNonRoot}} {{.seccompProfile.type}}{{end}} {{with $c0.securityContext}}{{.readOnlyRootFilesystem}} {{.allowPrivilegeEscalation}} {{range .capabilities.drop}}{{.}}{{end}}{{end}}" >"$T/security" &&
    render "{{with $c0.readinessProbe.httpGet}}{{.path}} {{.port}} {{.scheme}}{{end}} {{with $c0.livenessProbe.httpGet}}{{.path}} {{.port}} {{.scheme}}{{end}} {{range $c0.ports}}{{.name}}={{.containerPort}} {{end}}" >"$T/probes"
} >"$T/setup.log" 2>&1 || { cat "$T/setup.log"; fail "setting up the namespace, token, certificates"; finish; }

# The container as kubelet would start it from the Deployment, with host networking on 127.0.0.1
read -r user nonroot seccomp rofs ape drop <"$T/security"
read -r rpath rport _ lpath _ lscheme portmap <"$T/probes"
echo "image: Deployment: securityContext $user runAsNonRoot=$nonroot seccomp=$seccomp readOnlyRootFilesystem=$rofs allowPrivilegeEscalation=$ape drop=$drop"
flags=(-d --name gpupack-ci-deploy --network host --user "$user" -e POD_NAME=$POD -e POD_NAMESPACE=$NS
       -e KUBERNETES_SERVICE_HOST=127.0.0.1 -e "KUBERNETES_SERVICE_PORT=${K8S_APISERVER##*:}"
       -v "$T/sa:/var/run/secrets/kubernetes.io/serviceaccount:ro")
[ "$rofs" = true ] && flags+=(--read-only --read-only-tmpfs=false)   # no tmpfs: as Kubernetes
[ "$ape" = false ] && flags+=(--security-opt no-new-privileges)
[ "$drop" = ALL ] && flags+=(--cap-drop ALL)
while read -r name path ro; do
    case $name in
        policies) host=$ROOT/policies ;;        # the ConfigMap scripts/policies-configmap.sh makes of them
        tls) host=$T/tls ;;
        webhook-tls) host=$T/webhook-tls ;;
        *) fail "the Deployment mounts '$name': this test does not know what to put there"; finish ;;
    esac
    flags+=(-v "$host:$path:$([ "$ro" = true ] && echo ro || echo rw)")
done <"$T/mounts"
args=()
while IFS= read -r a; do
    a=${a//\$(POD_NAME)/$POD}; a=${a//\$(POD_NAMESPACE)/$NS}   # kubelet's $(VAR) expansion
    args+=("${a//0.0.0.0:/127.0.0.1:}")
done <"$T/args"
echo "image: Deployment: args ${args[*]}"
main_port=$(printf '%s\n' "${args[@]}" | sed -n 's/^--listen=.*:\([0-9]*\)$/\1/p')
hook_port=$(printf '%s\n' "${args[@]}" | sed -n 's/^--webhook-listen=.*:\([0-9]*\)$/\1/p')
port_of() { local p; for p in $portmap; do [ "${p%%=*}" = "$1" ] && echo "${p#*=}"; done; }
[ "$(port_of "$rport")" = "$main_port" ] || fail "the readiness probe's port $rport is not --listen's $main_port"

for p in "$main_port" "$hook_port"; do port_free "$p" || { fail "127.0.0.1:$p is taken"; finish; }; done
say "the Deployment: gpupack without RBAC yet"
if ! "${RUN[@]}" "${flags[@]}" $IMG "${args[@]}" >"$T/deploy-run.log" 2>&1; then
    cat "$T/deploy-run.log"; fail "podman run with the Deployment's settings"; finish
fi
U="https://127.0.0.1:$main_port"
live() { http_status "$U$lpath" -k; [ "$STATUS" = 200 ]; }   # kubelet's probes skip verification
if until_ok 20 live; then pass "liveness: $lscheme $lpath answers 200"
else fail "liveness: $lpath never answered 200"; podman logs gpupack-ci-deploy 2>&1 | tail -20; finish; fi

pid=$(podman inspect --format '{{.State.Pid}}' gpupack-ci-deploy)
st=$(cat "/proc/$pid/status")
uid=$(awk '/^Uid:/ {print $2 ":" $3 ":" $4 ":" $5}' <<<"$st")
gid=$(awk '/^Gid:/ {print $2}' <<<"$st")
check "runs as uid ${user%%:*}, gid ${user##*:} (Uid $uid, Gid $gid)" \
    test "$uid:$gid" = "${user%%:*}:${user%%:*}:${user%%:*}:${user%%:*}:${user##*:}"
check "no capabilities, no new privileges, a seccomp filter ($(grep -E '^(CapEff|CapPrm|NoNewPrivs|Seccomp):' <<<"$st" | tr -s '\t\n' '  '))" \
    bash -c 'grep -q "^CapEff:\s*0*$" <<<"$1" && grep -q "^CapPrm:\s*0*$" <<<"$1" &&
             grep -q "^NoNewPrivs:\s*1$" <<<"$1" && grep -q "^Seccomp:\s*2$" <<<"$1"' - "$st"
tun=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^GLIBC_TUNABLES=//p')
check "the allocator's thread caches are off in the Deployment's container (GLIBC_TUNABLES=$tun)" \
    test "$tun" = "glibc.malloc.tcache_count=0"
check "the root filesystem is read-only" bash -c 'awk '"'"'$5 == "/" {print $6}'"'"' "/proc/$1/mountinfo" | grep -q "^ro"' - "$pid"

http_status "$U$rpath" -k
check "readiness: $rpath is 503 before the first LIST (it is refused: no RBAC yet): $STATUS $(head -c 120 "$T/body")" \
    test "$STATUS" = 503
say "the Deployment: kubectl apply -f manifests/base/rbac.yaml"
K apply -f manifests/base/rbac.yaml >>"$T/setup.log" 2>&1 || fail "kubectl apply rbac.yaml"
ready() { http_status "$U$rpath" -k; [ "$STATUS" = 200 ]; }
if until_ok 45 ready; then pass "readiness: $rpath is 200 after the LIST: $(head -c 80 "$T/body")"
else fail "readiness: $rpath still $STATUS: $(head -c 200 "$T/body")"; fi
leader() { [ "$(K -n $NS get pod $POD -o 'jsonpath={.metadata.labels.gpupack\.io/leader}')" = true ]; }
if until_ok 30 leader; then
    pass "leader election: took the Lease $NS/gpupack ($(K -n $NS get lease gpupack -o 'jsonpath={.spec.holderIdentity}')) and labelled Pod $POD"
else
    fail "leader election: Pod $POD never labelled gpupack.io/leader=true"
fi

# mutual TLS on the verbs: the server verified by the CA, the client by --client-ca
CA=(--cacert "$T/tls/ca.crt")
verb=(-X POST -H 'Content-Type: application/json' -d @examples/filter-request.json)
http_status "$U/filter" "${CA[@]}" "${verb[@]}"
check "mutual TLS: /filter without a client certificate is refused: $STATUS" test "$STATUS" = 401
http_status "$U/filter" "${CA[@]}" "${verb[@]}" --cert "$T/stranger/client.crt" --key "$T/stranger/client.key"
check "mutual TLS: /filter with a certificate of another CA is refused: $STATUS" test "$STATUS" = 403
http_status "$U/filter" "${CA[@]}" "${verb[@]}" --cert "$T/mtls/client.crt" --key "$T/mtls/client.key"
check "mutual TLS: /filter with kube-scheduler's certificate answers: $STATUS $(head -c 100 "$T/body")" \
    bash -c '[ "$1" = 200 ] && grep -q "\"NodeNames\"" "$2"' - "$STATUS" "$T/body"
# the webhook, as the API server calls it: by the Service's name, verified by the webhook CA
svc=gpupack-webhook.$NS.svc
http_status "https://$svc:$hook_port/mutate" --cacert "$T/wh/ca.crt" --connect-to "$svc:$hook_port:127.0.0.1:$hook_port" \
    -X POST -H 'Content-Type: application/json' -d @test/fixtures/webhook/review-real.json
check "webhook: /mutate on :$hook_port (TLS as $svc) answers the AdmissionReview: $STATUS" \
    bash -c '[ "$1" = 200 ] && grep -q "\"allowed\":true" "$2"' - "$STATUS" "$T/body"

# SIGTERM, as kubelet stops it: a clean exit that releases the Lease
t0=$(date +%s.%N)
podman stop -t 30 gpupack-ci-deploy >/dev/null 2>&1
t1=$(date +%s.%N)
code=$(podman inspect --format '{{.State.ExitCode}}' gpupack-ci-deploy)
check "SIGTERM: exits $code in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s" test "$code" = 0
check "SIGTERM: the Lease is released" test -z "$(K -n $NS get lease gpupack -o 'jsonpath={.spec.holderIdentity}')"
[ "$FAILED" = 0 ] || podman logs gpupack-ci-deploy >"$T/gpupack.log" 2>&1

# --- 7. size -----------------------------------------------------------------------------------
size=$(podman image inspect --format '{{.Size}}' $IMG)
gz=$(podman save $IMG 2>/dev/null | gzip -n | wc -c)
say "size: $((size / 1000000)) MB uncompressed, $((gz / 1000000)) MB as podman save | gzip"
finish
