#!/usr/bin/env bash
# The main job for a new user: set up and build, convert the bundled sample model and print its
# report, then serve the page on 127.0.0.1 and print its URL (Ctrl-C stops it).
#   PORT=8080 scripts/start.sh
set -euo pipefail
source "$(dirname "$0")/env.sh"
bash "$ROOT/scripts/build.sh"

out="$ROOT/build/sample.lattice.onnx"
"$ROOT/build/native/onnx-lattice" convert "$ROOT/tests/fixtures/sample.onnx" -o "$out" \
  --report "$ROOT/build/sample.report.json"
echo
echo "converted model: $out"
echo "JSON report:     $ROOT/build/sample.report.json"
echo
exec node "$ROOT/scripts/serve.mjs" "$ROOT/build/web" "${PORT:-8080}"
