#include "core/progress.h"

#include <cmath>
#include <memory>

namespace lattice {

ProgressFn before_writing(ProgressFn to) {
  if (!to) return {};
  return [to = std::move(to)](std::string_view stage, double fraction) {
    if (stage != "done") to(stage, fraction * kWritingStart);
  };
}

WritingFn writing_on_scale(ProgressFn to) {
  if (!to) return {};
  // A percent step: a large model's writing is thousands of produced runs, a JS call each otherwise.
  auto last = std::make_shared<int>(-1);
  return [to = std::move(to), last](double share) {
    double fraction = kWritingStart + share * (1 - kWritingStart);
    int percent = static_cast<int>(std::floor(fraction * 100));
    if (percent == *last) return;
    *last = percent;
    to("writing", fraction);
  };
}

}  // namespace lattice
