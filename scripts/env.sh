# Shared paths for the scripts; sourced, not run.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${ONNX_LATTICE_CACHE:-$HOME/.cache/onnx-lattice}
PROTOBUF_SRC=$CACHE/protobuf-src
PROTOBUF_WASM_BUILD=$CACHE/protobuf-wasm
# Debian's emscripten needs acorn from the system node path, or optimizing links fail.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
# The compilers' objects are cached beside the downloads, keyed on sources relative to the clone,
# so a fresh clone of an unchanged tree compiles nothing it compiled before (links still run).
export CCACHE_DIR=${CCACHE_DIR:-$CACHE/ccache} CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1
COMPILER_CACHE=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
log() { printf '[onnx-lattice] %s\n' "$*" >&2; }
