#!/usr/bin/env bash
# Regenerates registry/catalog/patches/001-fuzz.json: the disc patch a
# complete groundgate fuzz run (seed 1) suggests for the catalog WITHOUT
# that patch. Run it after changing the catalog or the fuzzer's grammar.
set -euo pipefail
cd "$(dirname "$0")/.."
patch=registry/catalog/patches/001-fuzz.json
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo '{"patch":"disc","registry":"sha256:0000000000000000000000000000000000000000000000000000000000000000","version":0,"changes":[]}' > "$patch"
go build -o "$work/gg" ./cmd/groundgate
"$work/gg" fuzz --db "$work/fuzz.db" --runtime=false --seed 1 --seconds 300 --patch "$work/patch.json" --json > "$work/report.json"
cp "$work/patch.json" "$patch"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("complete:", r["complete"], "suggestions:", len(r["suggestions"]), "autofix:", json.dumps(r.get("autofix")))' "$work/report.json"
