#!/usr/bin/env bash
# Installs everything onnx-lattice needs on a fresh Debian 12 machine, idempotently.
# Third-party downloads and builds live in $ONNX_LATTICE_CACHE (outside git) and are reused.
#   scripts/setup.sh            build toolchain (emscripten, protobuf, fmt, catch2) + wasm protobuf-lite
#   scripts/setup.sh --test     also the test tools (chromium, python3-torch/onnx/numpy/pil/sklearn, npm dev packages,
#                               clang and libFuzzer)
#   scripts/setup.sh --fuzz     the build toolchain plus clang and libFuzzer (scripts/fuzz.sh)
set -euo pipefail
source "$(dirname "$0")/env.sh"

want_test=0 want_fuzz=0
[[ "${1:-}" == "--test" ]] && want_test=1 want_fuzz=1
[[ "${1:-}" == "--fuzz" ]] && want_fuzz=1

apt_packages=(emscripten protobuf-compiler libprotobuf-dev libfmt-dev catch2 cmake make g++ pkg-config ccache)
(( want_test )) && apt_packages+=(chromium python3-torch python3-torchvision python3-onnx python3-numpy python3-pil python3-sklearn)  # python3-pil is python3-PIL's module PIL (Pillow)
(( want_fuzz )) && apt_packages+=(clang libclang-rt-dev)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$CACHE"

# onnx-ml.proto ships inside Debian's python3-onnx binary package (apt-get source onnx is 404).
if [[ ! -f "$CACHE/onnx/onnx-ml.proto" ]]; then
  log "fetching onnx-ml.proto from Debian's python3-onnx"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download python3-onnx >/dev/null && dpkg -x python3-onnx_*.deb x)
  mkdir -p "$CACHE/onnx"
  cp "$tmp"/x/usr/lib/python3/dist-packages/onnx/onnx-ml.proto "$CACHE/onnx/onnx-ml.proto"
  rm -rf "$tmp"
fi

# protobuf-lite for WebAssembly, built from Debian's protobuf source package.
PB_VERSION=3.21.12
if [[ ! -f "$PROTOBUF_WASM_BUILD/libprotobuf-lite.a" ]]; then
  if [[ ! -d "$PROTOBUF_SRC/src" ]]; then
    log "fetching protobuf $PB_VERSION source from Debian"
    apt_dir="$CACHE/apt"
    mkdir -p "$apt_dir/lists/partial"
    sed 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources > "$apt_dir/src.sources"
    APT=(-o Dir::Etc::SourceList="$apt_dir/src.sources" -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists="$apt_dir/lists")
    apt-get "${APT[@]}" update -qq
    (cd "$CACHE" && apt-get "${APT[@]}" source --download-only protobuf >/dev/null)
    rm -rf "$PROTOBUF_SRC" && mkdir -p "$PROTOBUF_SRC"
    tar -xzf "$CACHE"/protobuf_${PB_VERSION}.orig.tar.gz -C "$PROTOBUF_SRC" --strip-components=1
  fi
  log "building protobuf-lite for wasm (once; cached in $PROTOBUF_WASM_BUILD)"
  emcmake cmake -S "$PROTOBUF_SRC" -B "$PROTOBUF_WASM_BUILD" -DCMAKE_BUILD_TYPE=MinSizeRel \
    -Dprotobuf_BUILD_TESTS=OFF -Dprotobuf_BUILD_PROTOC_BINARIES=OFF -Dprotobuf_BUILD_LIBPROTOC=OFF \
    -Dprotobuf_WITH_ZLIB=OFF -Dprotobuf_BUILD_SHARED_LIBS=OFF >/dev/null
  emmake cmake --build "$PROTOBUF_WASM_BUILD" --target libprotobuf-lite -j"$(nproc)" >/dev/null
fi

# npm packages: the page's layout library, the check's runtime and the zip reader for .npz
# (build.sh copies them into build/web), the Node package's PNG and JPEG decoders always, the test
# tools with --test. A checkout that has the test tools keeps them: `npm ci --omit=dev` would
# delete them.
npm_needed=(@dagrejs/dagre onnxruntime-web fflate pngjs jpeg-js)
(( want_test )) && npm_needed+=(playwright-core onnxruntime-node axe-core)
for p in "${npm_needed[@]}"; do
  if [[ ! -d "$ROOT/node_modules/$p" ]]; then
    omit=(--omit=dev)
    if (( want_test )) || [[ -d "$ROOT/node_modules/playwright-core" ]]; then omit=(); fi
    log "installing npm packages${omit:+ the page needs}"
    # onnxruntime-node's postinstall downloads from outside the registry; its CPU binaries are in the package.
    (cd "$ROOT" && ONNXRUNTIME_NODE_INSTALL=skip npm ci "${omit[@]}" --no-audit --no-fund --loglevel=error)
    break
  fi
done
# The package test installs the packed package with --offline, as a user with no network would:
# npm then needs its dependencies' registry entries in its cache, which `npm ci` does not keep.
if (( want_test )); then
  deps=$(node -e "const d = require('$ROOT/wasm/package.json').dependencies; console.log(Object.entries(d).map(([n, v]) => n + '@' + v).join(' '))")
  # shellcheck disable=SC2086  # one word a dependency
  npm cache add $deps --loglevel=error
fi
log "setup done"
