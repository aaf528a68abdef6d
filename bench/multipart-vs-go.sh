#!/usr/bin/env bash
# Rust wirespeed-multipart vs Go mime/multipart on the same body, in one run.
#
# The body (1000 small fields + one 64 MiB file) is generated once by the Go
# peer (bench/go-multipart, deterministic; the Rust bench has the same
# generator) into a temp file; both parse it in 64 KiB reads. Prints GB/s
# (1e9 bytes/s) for each and the ratio Rust/Go.
#
#   bench/multipart-vs-go.sh            # needs cargo, go (GO=/path/to/go), python3
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
body=$tmp/body.bin

(cd bench/go-multipart && GOFLAGS=-mod=mod "$GO" build -o "$tmp/go-multipart" .)
"$tmp/go-multipart" -gen "$body"
echo "body: $(wc -c <"$body") bytes at $body"

echo "== Rust (criterion: cargo bench -p wirespeed-multipart --bench parse)"
MULTIPART_BENCH_BODY=$body cargo bench -q -p wirespeed-multipart --bench parse -- --noplot 2>&1 |
    grep -E '^multipart|time:|thrpt:' | grep -v '%' || true

echo "== Go (mime/multipart, 64 KiB reads, io.CopyBuffer to io.Discard with 64 KiB)"
go_line=$("$tmp/go-multipart" -body "$body" -n 20)
echo "$go_line"
go_gbps=$(sed -E 's/.*mean ([0-9.]+) GB\/s.*/\1/' <<<"$go_line")

target=$(cargo metadata -q --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
python3 - "$target" "$(wc -c <"$body")" "$go_gbps" <<'PY'
import json, sys
target, size, go = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
group = "multipart_64MiB_1000fields_64KiB_chunks"
print("== Summary (Go: mean of 20; Rust: criterion slope; GB/s = 1e9 bytes/s)")
print(f"go  mime/multipart          {go:6.2f} GB/s")
for fn, what in [("buffered", "256 KiB buffer, 64 KiB copied per read, like the service"),
                 ("window", "parser only, zero-copy window"),
                 ("memmem_only", "bare memmem scan, the ceiling")]:
    with open(f"{target}/criterion/{group}/{fn}/new/estimates.json") as f:
        est = json.load(f)
    # criterion's headline figure is the slope estimate; mean if absent.
    ns = (est.get("slope") or est["mean"])["point_estimate"]
    gbps = size / ns
    ratio = f"  {gbps / go:4.2f}x Go" if fn != "memmem_only" else ""
    print(f"rust {fn:<22} {gbps:6.2f} GB/s{ratio}   ({what})")
PY
