#!/bin/sh
# deps.sh -- make sure the build's libraries are present; install them on Debian when root.
#   scripts/deps.sh          check, and install what is missing (root) or print the apt-get line
#   scripts/deps.sh --check  only check; exit 1 when something is missing
set -u
PKGS_PC="libmicrohttpd libcurl jansson yaml-0.1 gnutls libnghttp2 check"
missing=""
command -v pkg-config >/dev/null 2>&1 || missing="pkg-config"
for pc in $PKGS_PC; do
  pkg-config --exists "$pc" 2>/dev/null || missing="$missing $pc"
done
[ -z "$missing" ] && exit 0
[ "${1:-}" = "--check" ] && exit 1

debs="pkg-config make gcc libmicrohttpd-dev libcurl4-openssl-dev libjansson-dev libyaml-dev libgnutls28-dev libnghttp2-dev check"
echo "gpupack: missing build libraries:$missing" >&2
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "gpupack: installing: apt-get install -y $debs" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq $debs >/dev/null || exit 1
  exit 0
fi
echo "gpupack: run as root:  apt-get update && apt-get install -y $debs" >&2
exit 1
