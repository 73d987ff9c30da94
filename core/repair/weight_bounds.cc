#include "core/repair/weight_bounds.h"

#include "core/graph/model_index.h"
#include "core/onnx/model_io.h"
#include "core/options.h"
#include "core/pattern/registry.h"
#include "core/util/utf8.h"

namespace lattice::repair {

Result<FpqWeightBounds> fpq_layer_bounds(std::span<const uint8_t> bytes, const std::string& node, MeasuredRanges measured,
                                         bool through_batch_norm) {
  auto model = parse_model(bytes);
  if (!model) return model.error();
  const auto labels = GraphView::original_labels(model->graph());
  const ModelIndex index(*model, labels);
  Options options;
  options.fixed_point = FixedPoint::kFpq;
  options.channel_ranges = std::move(measured.ranges);
  options.channel_clips = std::move(measured.clips);
  const MatchContext ctx{index.view, index.shapes, index.opset, *find_target("none"), options};
  for (int id = 0; id < index.view.size(); ++id) {
    if (index.view.label(id) == node) return fpq_weight_bounds(ctx, id, through_batch_norm);
  }
  return options_error("no node is labelled '{}' in this model", printable(node));
}

}  // namespace lattice::repair
