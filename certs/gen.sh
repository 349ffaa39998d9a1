#!/usr/bin/env bash
# Makes a development CA and a serving certificate for lbguard with openssl.
#
#   certs/gen.sh [SERVICE_DNS_NAME] [OUT_DIR]
#
# SERVICE_DNS_NAME defaults to lbguard.lbguard-system.svc; the certificate also covers
# NAME.cluster.local, localhost and 127.0.0.1. OUT_DIR defaults to certs/out.
# Writes ca.crt, ca.key, tls.crt, tls.key, and prints the caBundle (base64 of ca.crt).
set -euo pipefail
name="${1:-lbguard.lbguard-system.svc}"
out="${2:-$(dirname "$0")/out}"
days="${DAYS:-365}"
mkdir -p "$out"
umask 077
openssl req -x509 -newkey rsa:2048 -nodes -days "$days" -sha256 \
  -subj "/CN=lbguard development CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -keyout "$out/ca.key" -out "$out/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -sha256 -subj "/CN=$name" \
  -keyout "$out/tls.key" -out "$out/tls.csr" 2>/dev/null
cat > "$out/ext.cnf" <<EXT
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:$name,DNS:$name.cluster.local,DNS:localhost,IP:127.0.0.1
EXT
openssl x509 -req -in "$out/tls.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" -CAcreateserial \
  -days "$days" -sha256 -extfile "$out/ext.cnf" -out "$out/tls.crt" 2>/dev/null
rm -f "$out/tls.csr" "$out/ext.cnf" "$out/ca.srl"
chmod 644 "$out/ca.crt" "$out/tls.crt"
echo "wrote $out/{ca.crt,ca.key,tls.crt,tls.key} for $name"
echo "caBundle: $(base64 -w0 < "$out/ca.crt")"
