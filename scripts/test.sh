#!/usr/bin/env bash
# Sets up everything the tests need (Debian packages, npm packages, protobuf for wasm, fixture
# models), builds both targets, and runs every test suite: Catch2 natively and as wasm under
# Node, then the node:test suites (API, CLIs, numerics with onnxruntime-node, the page in
# Chromium), then fuzzes the conversion for 60 s. Exits non-zero if any suite fails.
set -euo pipefail
source "$(dirname "$0")/env.sh"
bash "$ROOT/scripts/setup.sh" --test
# Everything the suites import must be installed by setup.sh: checked first, in seconds.
node "$ROOT/scripts/check_test_deps.mjs"
bash "$ROOT/scripts/build.sh" --test

# Torchvision architectures with random weights, exported once into the cache (not committed).
export ONNX_LATTICE_ZOO="$CACHE/zoo"
log "fixture zoo in $ONNX_LATTICE_ZOO"
/usr/bin/python3 "$ROOT/tests/fixtures/make_fixtures.py" zoo "$ONNX_LATTICE_ZOO"
/usr/bin/python3 "$ROOT/tests/fixtures/make_fixtures.py" twins "$ONNX_LATTICE_ZOO/twins"
# Small CNNs trained on real handwritten digits (seconds on idle cores, then cached), with their
# calibration and held-out samples: what the check on data and the repair are judged on.
export ONNX_LATTICE_TRAINED="$CACHE/trained"
log "trained models in $ONNX_LATTICE_TRAINED"
/usr/bin/python3 "$ROOT/tests/fixtures/make_trained.py" "$ONNX_LATTICE_TRAINED"
# CNNs in the shapes people bring to the FPGA (SPPF, residual), trained on placed 64×64 digits:
# FPQ's range fit and twin judged on models they were not developed on.
export ONNX_LATTICE_FPQ_TRAINED="$CACHE/fpq_trained"
log "FPQ trained models in $ONNX_LATTICE_FPQ_TRAINED"
/usr/bin/python3 "$ROOT/tests/fixtures/make_fpq_trained.py" "$ONNX_LATTICE_FPQ_TRAINED"
# The same digits, trained into the graph shapes of other exporters (tf2onnx's, paddle2onnx's).
export ONNX_LATTICE_EXPORTERS="$CACHE/exporters"
/usr/bin/python3 "$ROOT/tests/fixtures/make_exporters.py" "$ONNX_LATTICE_EXPORTERS"
# Public trained models that npm packages ship, with real photos from Debian's packages and
# rendered text (fetched once, then cached): the repair judged on models nobody here designed.
export ONNX_LATTICE_WILD="$CACHE/wild"
log "wild models in $ONNX_LATTICE_WILD"
/usr/bin/python3 "$ROOT/tests/fixtures/make_wild.py" "$ONNX_LATTICE_WILD"

failed=0
log "Catch2, native"
"$ROOT/build/native/onnx_lattice_tests" || failed=1
log "Catch2, wasm under Node"
node "$ROOT/build/wasm/onnx_lattice_tests.js" --use-colour no || failed=1
log "node:test suites"
node --test --test-concurrency=1 "$ROOT"/tests/node/ || failed=1
log "fuzzing the conversion (60 s)"
bash "$ROOT/scripts/fuzz.sh" 60 || failed=1
exit $failed
