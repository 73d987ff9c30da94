#!/usr/bin/env bash
# Speed of the conversion, as ratios measured in one run (this machine is noisy: compare ratios,
# not absolute times).
# On the largest fixture:
#   convert / round trip : native full conversion vs a plain parse + serialise (target <= 2)
#   wasm / native        : the same conversion in WebAssembly under Node vs native (target <= 1.6)
# On synthetic chains of N blocks Conv -> BatchNormalization -> Relu [-> MaxPool], built by
# bench/chain_model.cc into the cache, timed as whole CLI processes (bench/chain.mjs):
#   convert / round trip per N (target <= 3 at N = 1600), the growth exponent of the conversion
#   (target <= 1.15 from 1600 to 25600), and the Node CLI at the largest N (target <= 5).
# Issue 9, "tensor data stays where it is" (bench/data_stays.mjs), on ResNet-50 as one file and
# with external data: the CLIs against `cp` of the same files, Node CLI / native, and the peak
# wasm heap / model size, each beside its target; and the page in headless Chromium (bench/page.mjs),
# file pick to done on VGG-11-BN (507 MiB, exported into the cache once) and ResNet-50, against the
# Node CLI's whole-process convert in the same run (the target: page <= 2x), with where the time went.
# The repair (bench/repair.mjs) on the digits CNN and ResNet-50: time and peak memory in the Node
# CLI and in the page, cross-origin isolated and not, against its targets (ResNet-50 <= 60 s in
# Node, the page <= 2x Node), and where the time went layer by layer. The wild models
# (bench/wild.mjs): each one's conversion and repair time in the Node CLI beside its task figure.
#   scripts/bench.sh [MODEL.onnx] [REPEATS] [TARGET]      CHAIN_SIZES="100 400 1600 6400 25600"
# Every step runs or the bench stops: a failing step is named and the exit status is non-zero.
set -euo pipefail
trap 'status=$?; echo "bench.sh: stopped, this step failed (exit status $status, line $LINENO): $BASH_COMMAND" >&2; exit $status' ERR
source "$(dirname "$0")/env.sh"
build_log=$(mktemp)
if ! bash "$ROOT/scripts/build.sh" --test >"$build_log" 2>&1; then
  tail -n 40 "$build_log" >&2
  echo "bench.sh: stopped, the build failed (the end of its output is above)" >&2
  exit 1
fi
rm -f "$build_log"
resnet50=$CACHE/zoo/resnet50.onnx
model=${1:-$resnet50}
repeats=${2:-5}
target=${3:-lattice}
[[ -f "$resnet50" ]] || /usr/bin/python3 "$ROOT/tests/fixtures/make_fixtures.py" zoo "$CACHE/zoo" resnet50
if [[ ! -f "$model" ]]; then
  echo "bench.sh: stopped, no model $model" >&2
  exit 1
fi

native=$("$ROOT/build/native/onnx_lattice_bench" "$model" "$repeats" "$target")
wasm=$(node "$ROOT/bench/bench_wasm.mjs" "$model" "$repeats" "$target")
node -e '
const [n, w, model, target] = [JSON.parse(process.argv[1]), JSON.parse(process.argv[2]), process.argv[3], process.argv[4]];
const r = (x) => x.toFixed(2);
console.log(`model ${model} (${(n.bytes / 2 ** 20).toFixed(1)} MiB), target ${target}, ${n.matches} matches`);
console.log(`native round trip      ${r(n.round_trip_ms)} ms`);
console.log(`native convert         ${r(n.convert_ms)} ms   convert / round trip = ${r(n.convert_ms / n.round_trip_ms)}  (target <= 2)`);
console.log(`wasm convert           ${r(w.convert_ms)} ms   wasm / native = ${r(w.convert_ms / n.convert_ms)}  (target <= 1.6)`);
console.log(`wasm incl. JS copies   ${r(w.with_js_copies_ms)} ms   / native = ${r(w.with_js_copies_ms / n.convert_ms)}`);
' "$native" "$wasm" "$model" "$target"

echo
echo "tensor data stays where it is"
node "$ROOT/bench/data_stays.mjs" "$ROOT/build/native/onnx-lattice" "$resnet50" "$CACHE" "$repeats"

sizes=(${CHAIN_SIZES:-100 400 1600 6400 25600})
chains=$CACHE/bench
mkdir -p "$chains"
echo
echo "chains, Conv -> BatchNormalization -> Relu per block (one fold each), native CLI"
node "$ROOT/bench/chain.mjs" "$ROOT/build/native" "$chains" "${sizes[@]}"
echo
echo "chains with a MaxPool(3x3, stride 1, pad 1) per block (a fold and a snap each), native CLI"
node "$ROOT/bench/chain.mjs" "$ROOT/build/native" "$chains" --maxpool "${sizes[@]}"
echo
echo "the largest chain with a MaxPool per block in the Node CLI (target: convert / round trip <= 5)"
node "$ROOT/bench/chain.mjs" "$ROOT/build/native" "$chains" --maxpool --node-cli "${sizes[-1]}"

echo
echo "the page, file pick to done"
vgg=$CACHE/bench/vgg11_bn.onnx
[[ -f "$vgg" ]] || /usr/bin/python3 "$ROOT/tests/fixtures/make_fixtures.py" bench "$CACHE/bench" vgg11_bn
node "$ROOT/bench/page.mjs" "$ROOT/build/web" "$repeats" "$vgg" "$resnet50"

echo
echo "the check of ResNet-50, Node CLI and page side by side"
node "$ROOT/bench/check.mjs" "$ROOT/build/web" "$repeats" "$resnet50"

echo
echo "onnxruntime-node and onnxruntime-web on one forward pass of ResNet-50 (the floor of the page's repair against the Node CLI's)"
node "$ROOT/bench/runtimes.mjs" "$resnet50" "$repeats"

echo
echo "the repair, Node CLI and page (isolated and not) side by side, on the digits CNN and ResNet-50"
# ResNet-50's repair runs minutes in each of its three runs a repeat: at most 3 repeats.
node "$ROOT/bench/repair.mjs" "$ROOT/build/web" "$(( repeats < 3 ? repeats : 3 ))"

echo
echo "trained models other people exported (npm packages' models on real photos and rendered text): conversion and repair time, and the task figure each gives, Node CLI"
/usr/bin/python3 "$ROOT/tests/fixtures/make_wild.py" "$CACHE/wild"
node "$ROOT/bench/wild.mjs" --dir "$CACHE/wild"
