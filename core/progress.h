#pragma once
// Progress of one conversion, for callers that show it (the page's progress bar, the Node API's
// onProgress): `stage` names what starts now, `fraction` (0..1) is how much of the whole
// conversion is done. Events are coarse — one per phase pass — so a callback costs nothing
// measurable; an empty function means nobody listens.
#include <functional>
#include <string_view>

namespace lattice {

using ProgressFn = std::function<void(std::string_view stage, double fraction)>;

// How far into the output files writing is (0..1): on a folded model the longest stage, since the
// folded weights are computed as they are written (core/onnx/deferred_data.h).
using WritingFn = std::function<void(double share)>;

// One scale for a whole call, writing included, for listeners that see no other line (the Node
// API): the core's stages take [0, kWritingStart), writing the rest by bytes, and "done" comes
// only after the last output byte is produced. kWritingStart is measured: on ResNet-50 with its
// folds the core's stages are about a fifth of the call (see wasm/README.md).
inline constexpr double kWritingStart = 0.2;

// The core's events on that scale; its own "done" is held back for the caller to send after writing.
ProgressFn before_writing(ProgressFn to);
// "writing" on that scale, once per whole percent of the call.
WritingFn writing_on_scale(ProgressFn to);

}  // namespace lattice
