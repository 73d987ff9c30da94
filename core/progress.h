#pragma once
// Progress of one conversion, for callers that show it (the page's progress bar, the Node API's
// onProgress): `stage` names what starts now, `fraction` (0..1) is how much of the whole
// conversion is done. Events are coarse — one per phase pass — so a callback costs nothing
// measurable; an empty function means nobody listens.
#include <functional>
#include <string_view>

namespace lattice {

using ProgressFn = std::function<void(std::string_view stage, double fraction)>;

}  // namespace lattice
