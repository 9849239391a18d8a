#!/bin/sh
# webhook-certs.sh -- certificates for gpupack's admission webhook on clusters without cert-manager.
#
#   scripts/webhook-certs.sh DIR [NAME...]
#
# Writes DIR/ca.crt, DIR/ca.key (a CA valid 10 years) and DIR/tls.crt, DIR/tls.key (the serving
# certificate, valid 2 years, signed by that CA) with every NAME as a subject alternative name:
# IP addresses become IP SANs, anything else DNS SANs. Default names: the in-cluster Service,
#   gpupack-webhook.gpupack-system.svc and gpupack-webhook.gpupack-system.svc.cluster.local.
# With kustomize, write them where manifests/components/script-certs reads them (it also
# puts ca.crt into the webhook registration's caBundle):
#   scripts/webhook-certs.sh manifests/components/script-certs/webhook
# and apply an overlay that uses that component (manifests/overlays/script-certs).
# Keep ca.key offline (or delete it): it is only needed to issue the next serving certificate.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 DIR [NAME...]" >&2; exit 2; }
dir=$1; shift
[ $# -ge 1 ] || set -- gpupack-webhook.gpupack-system.svc gpupack-webhook.gpupack-system.svc.cluster.local
mkdir -p "$dir"
umask 077
san=""
for n in "$@"; do
    case $n in
        *[!0-9.]*) san="$san${san:+,}DNS:$n" ;;
        *) san="$san${san:+,}IP:$n" ;;
    esac
done
openssl ecparam -name prime256v1 -genkey -noout -out "$dir/ca.key"
openssl req -x509 -new -key "$dir/ca.key" -sha256 -days 3650 -subj "/CN=gpupack-webhook-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$dir/ca.crt"
openssl ecparam -name prime256v1 -genkey -noout -out "$dir/tls.key"
openssl req -new -key "$dir/tls.key" -subj "/CN=$1" -out "$dir/tls.csr"
printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' \
    "$san" >"$dir/tls.ext"
openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -sha256 -days 730 -extfile "$dir/tls.ext" -out "$dir/tls.crt" 2>/dev/null
rm -f "$dir/tls.csr" "$dir/tls.ext" "$dir/ca.srl"
chmod 644 "$dir/ca.crt" "$dir/tls.crt"
echo "$dir: ca.crt ca.key tls.crt tls.key for $san"
