#!/usr/bin/env bash
# certs.sh -- make throwaway certificates with the openssl command: a CA,
# node certificates (for the client port and for the raft port's mutual
# TLS) and client certificates. For trying baton out and for its tests; a
# production cluster takes its certificates from the team's own CA
# (README, "Securing a cluster").
#
#   certs.sh ca DIR NAME
#       a self-signed CA: DIR/NAME.pem and DIR/NAME.key
#   certs.sh cert DIR NAME CA CN SANS [DAYS]
#       a certificate with subject CN=CN signed by DIR/CA.pem, valid for
#       both TLS servers and clients: DIR/NAME.pem and DIR/NAME.key. SANS
#       is an openssl subjectAltName list ("IP:127.0.0.1,DNS:localhost")
#       or "-" for none. DAYS defaults to 825; -1 makes one that expired
#       yesterday.
#   certs.sh cluster DIR N [IP]
#       a CA "ca", node certificates node1..nodeN (CN baton-node-<id>,
#       SANs IP (default 127.0.0.1) and DNS:localhost) and a client
#       certificate "client" (CN baton-client)
#
# Keys are EC P-256: small, and fast to sign and verify. Private keys are
# written mode 0600.
set -euo pipefail

die() { echo "certs.sh: $*" >&2; exit 2; }
command -v openssl >/dev/null 2>&1 || die "the openssl command is missing (apt-get install openssl)"

new_key() { # FILE
    (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null)
}

make_ca() { # DIR NAME
    local dir=$1 name=$2
    mkdir -p "$dir"
    new_key "$dir/$name.key"
    openssl req -x509 -new -key "$dir/$name.key" -out "$dir/$name.pem" -days 3650 \
        -subj "/CN=$name" -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}

make_cert() { # DIR NAME CA CN SANS [DAYS]
    local dir=$1 name=$2 ca=$3 cn=$4 sans=$5 days=${6:-825} ext
    [ -f "$dir/$ca.pem" ] || die "no CA $dir/$ca.pem"
    new_key "$dir/$name.key"
    ext=$(mktemp)
    {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature"
        echo "extendedKeyUsage=serverAuth,clientAuth"
        [ "$sans" = "-" ] || echo "subjectAltName=$sans"
    } >"$ext"
    openssl req -new -key "$dir/$name.key" -subj "/CN=$cn" 2>/dev/null |
        openssl x509 -req -CA "$dir/$ca.pem" -CAkey "$dir/$ca.key" -CAcreateserial \
            -CAserial "$dir/$ca.srl" -days "$days" -extfile "$ext" -out "$dir/$name.pem" 2>/dev/null
    rm -f "$ext"
}

cmd=${1:-}
case "$cmd" in
ca)
    [ $# -eq 3 ] || die "usage: certs.sh ca DIR NAME"
    make_ca "$2" "$3"
    ;;
cert)
    [ $# -ge 6 ] && [ $# -le 7 ] || die "usage: certs.sh cert DIR NAME CA CN SANS [DAYS]"
    make_cert "$2" "$3" "$4" "$5" "$6" "${7:-825}"
    ;;
cluster)
    [ $# -ge 3 ] && [ $# -le 4 ] || die "usage: certs.sh cluster DIR N [IP]"
    dir=$2 n=$3 ip=${4:-127.0.0.1}
    make_ca "$dir" ca
    for i in $(seq 1 "$n"); do
        make_cert "$dir" "node$i" ca "baton-node-$i" "IP:$ip,DNS:localhost"
    done
    make_cert "$dir" client ca baton-client -
    ;;
*)
    die "usage: certs.sh ca|cert|cluster ... (see the top of this file)"
    ;;
esac
