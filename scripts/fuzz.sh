#!/usr/bin/env bash
# Fuzzes the whole conversion (fuzz/convert_fuzzer.cc) for SECONDS (default 60) with libFuzzer,
# ASan and UBSan, built with Debian's clang into build/fuzz. The corpus lives in the cache
# ($CACHE/fuzz-corpus) and grows from run to run; each run starts from it and from the committed
# fixtures. Exits non-zero on a finding (crash, sanitizer report, broken invariant, hang over 10 s,
# over 2 GB of memory), printing the reproducer's path; replay one with
#   build/fuzz/onnx_lattice_fuzzer FILE
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
source "$(dirname "$0")/env.sh"
seconds=${1:-60}
bash "$ROOT/scripts/setup.sh" --fuzz

build=$ROOT/build/fuzz
log "building the fuzzer (clang, libFuzzer + ASan + UBSan) in $build"
cmake -S "$ROOT" -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DONNX_ML_PROTO="$CACHE/onnx/onnx-ml.proto" -DONNX_LATTICE_FUZZ=ON -DONNX_LATTICE_TESTS=OFF \
  -DONNX_LATTICE_WERROR=OFF "${COMPILER_CACHE[@]}" >/dev/null
cmake --build "$build" --target onnx_lattice_fuzzer -j"$(nproc)" >/dev/null

# Seeds: every committed fixture, the crafted ones, and the fuzz seeds and past findings.
corpus=$CACHE/fuzz-corpus seeds=$CACHE/fuzz-seeds artifacts=$CACHE/fuzz-artifacts
rm -rf "$seeds" && mkdir -p "$corpus" "$seeds" "$artifacts"
cp "$ROOT"/tests/fixtures/*.onnx "$ROOT"/tests/fixtures/crafted/* "$seeds/"
if compgen -G "$ROOT/tests/fixtures/fuzz/*.bin" >/dev/null; then cp "$ROOT"/tests/fixtures/fuzz/*.bin "$seeds/"; fi
max_len=$(( $(stat -c %s "$seeds"/* | sort -n | tail -1) * 2 ))

# Each run first replays the whole corpus, which only grows: past 2,000 inputs (about 30 s of
# replay) it is merged down to the inputs that add coverage, so the budget goes to fuzzing.
if (( $(ls "$corpus" | wc -l) > 2000 )); then
  log "merging the corpus ($(ls "$corpus" | wc -l) inputs) down to those that add coverage"
  merged=$(mktemp -d "$CACHE/fuzz-corpus-merge.XXXXXX")
  "$build/onnx_lattice_fuzzer" -merge=1 -timeout=10 -rss_limit_mb=2048 "$merged" "$corpus" >/dev/null 2>&1 &&
    rm -rf "$corpus" && mv "$merged" "$corpus" || rm -rf "$merged"
fi

log "fuzzing for ${seconds}s (corpus $corpus)"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
start=$(date +%s)
"$build/onnx_lattice_fuzzer" "$corpus" "$seeds" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len="$max_len" -dict="$ROOT/fuzz/onnx.dict" -artifact_prefix="$artifacts/" -print_final_stats=1 >"$out" 2>&1 || status=$?
elapsed=$(( $(date +%s) - start ))
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -1)
runs=${runs:-0}

# Cumulative fuzzing time and executions, kept beside the corpus.
stats=$CACHE/fuzz-stats
read -r total_s total_runs < <(cat "$stats" 2>/dev/null || echo "0 0")
total_s=$(( total_s + elapsed )) total_runs=$(( total_runs + runs ))
echo "$total_s $total_runs" > "$stats"

if (( status != 0 )); then
  tail -n 60 "$out" >&2
  reproducer=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$out" | tail -1)
  log "FUZZ FINDING (exit $status): reproducer ${reproducer:-not written}; replay: $build/onnx_lattice_fuzzer ${reproducer:-FILE}"
  exit 1
fi
log "fuzz: $runs runs in ${elapsed}s, corpus $(ls "$corpus" | wc -l) inputs; cumulative ${total_s}s, $total_runs runs"
