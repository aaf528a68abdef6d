#!/usr/bin/env bash
# bench/litmus-apache.sh — litmus 0.13's five suites against Apache httpd's
# mod_dav (bench/apache.sh), the reference wirespeed's WebDAV is held to
# (crates/service/tests/dav.rs runs the same suites against wirespeed).
# Prints litmus's summary lines; fails unless every suite has 0 failed.
#
#   bash bench/litmus-apache.sh
set -euo pipefail
BENCH=litmus-apache
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/apache.sh"
command -v litmus >/dev/null || { echo "litmus is needed (apt install litmus)" >&2; exit 1; }
have_apache || { echo "Apache httpd with mod_dav is needed (apt install apache2)" >&2; exit 1; }
mkdir -p "$W/dav" "$W/run"
start_apache "$W/dav" rw
cd "$W/run"
litmus "$AURL/" | tee "$W/litmus.out" | grep -E '^<- summary|^-> running' || true
if grep '^<- summary' "$W/litmus.out" | grep -vq ' 0 failed'; then
    echo "litmus: failures against Apache (see above)" >&2
    exit 1
fi
echo "litmus against Apache $("$APACHE_BIN" -v | sed -n 's|^Server version: Apache/\([^ ]*\).*|\1|p'): $(grep -c '^<- summary' "$W/litmus.out") suites, 0 failed"
