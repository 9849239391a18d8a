#!/bin/sh
# gen-certs.sh -- certificates for gpupack's mutual TLS, with openssl, when cert-manager is
# not used (manifests/components/cert-manager is the cert-manager way).
#   scripts/gen-certs.sh DIR [SERVER_DNS_NAME] [DAYS]
# writes into DIR:
#   ca.crt ca.key            the CA both sides trust (keep ca.key offline)
#   server.crt server.key    gpupack's serving certificate (--tls-cert/--tls-key), SANs:
#                            SERVER_DNS_NAME (default gpupack.gpupack-system.svc), localhost, 127.0.0.1
#   client.crt client.key    kube-scheduler's client certificate (tlsConfig certFile/keyFile)
# With kustomize, write them where manifests/components/script-certs reads them:
#   scripts/gen-certs.sh manifests/components/script-certs/mtls
# and apply an overlay that uses that component (manifests/overlays/script-certs). By hand:
#   kubectl -n gpupack-system create secret generic gpupack-tls \
#     --from-file=tls.crt=DIR/server.crt --from-file=tls.key=DIR/server.key --from-file=ca.crt=DIR/ca.crt
#   and give kube-scheduler DIR/client.crt, DIR/client.key and DIR/ca.crt (scheduler-config.yaml).
set -eu
dir=${1:?usage: gen-certs.sh DIR [SERVER_DNS_NAME] [DAYS]}
name=${2:-gpupack.gpupack-system.svc}
days=${3:-825}
mkdir -p "$dir"
cd "$dir"
umask 077
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
  -subj "/CN=gpupack-ca" -keyout ca.key -out ca.crt 2>/dev/null
leaf() {  # leaf NAME CN EXTENDED_KEY_USAGE SAN
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$2" \
    -keyout "$1.key" -out "$1.csr" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=%s\n%s\n' "$3" "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
    -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
leaf server "$name" serverAuth "subjectAltName=DNS:$name,DNS:localhost,IP:127.0.0.1"
leaf client kube-scheduler clientAuth ""
rm -f ca.srl
chmod 644 ca.crt server.crt client.crt
echo "wrote $dir: ca.crt ca.key server.crt server.key client.crt client.key"
