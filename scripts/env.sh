# Shared paths for the scripts; sourced, not run.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${ONNX_LATTICE_CACHE:-$HOME/.cache/onnx-lattice}
PROTOBUF_SRC=$CACHE/protobuf-src
PROTOBUF_WASM_BUILD=$CACHE/protobuf-wasm
# Debian's emscripten needs acorn from the system node path, or optimizing links fail.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
log() { printf '[onnx-lattice] %s\n' "$*" >&2; }
