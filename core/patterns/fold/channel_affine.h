#pragma once
// The arithmetic every fold into a Conv, ConvTranspose or Gemm shares: a per-output-channel
// y = layer(x) * scale + shift (an inference BatchNormalization, or an exporter's Mul and Add)
// folded into the layer's weight and bias, computed in double and rounded once to their types.
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/names.h"
#include "core/pattern/pattern.h"

namespace lattice {

struct ChannelAffine {
  std::vector<double> scale, shift;  // one per output channel
};

// Input `input` of `node` read as doubles, or the reason it cannot be, saying what the tensor is.
Result<std::vector<double>> constant_values(const GraphView& view, ExternalData* data, const onnx::NodeProto& node,
                                            int input, std::string_view role);
inline Result<std::vector<double>> constant_values(const MatchContext& ctx, const onnx::NodeProto& node, int input,
                                                   std::string_view role) {
  return constant_values(ctx.view, ctx.data, node, input, role);
}

// An inference BatchNormalization's map, scale = gamma / sqrt(var + eps) and shift = beta -
// mean * scale per channel, or why it has none: training mode, per-activation statistics
// (spatial=0), parameters that are not constants of one length, or a map that is not finite.
Result<ChannelAffine> batch_norm_affine(const GraphView& view, int64_t opset, ExternalData* data, int bn_index);

// The weight and bias that make `layer`, followed by `affine`, compute what `weights` and `bias`
// compute alone (a fit of the layer and the affine as one): the affine taken out of them, per
// output channel, in place. A channel whose scale is 0 passes nothing of the layer through: it
// gets zero weights and bias. `weight` is the layer's weight tensor (its dims say the layout).
Status unfold_channel_affine(const onnx::NodeProto& layer, const onnx::TensorProto& weight, const ChannelAffine& affine,
                             std::vector<float>& weights, std::vector<float>& bias);

// The layer `layer_index` with `affine` folded into new weight and bias tensors (originals are
// never modified: another node may share them), writing `output`. `source` names what is folded
// ("BatchNormalization 'bn'") for the messages; `suffix` ends the new tensors' names.
Result<Replacement> fold_channel_affine(const MatchContext& ctx, int layer_index, const ChannelAffine& affine,
                                        const std::string& output, std::string_view source, std::string_view suffix,
                                        NameAllocator& names);

}  // namespace lattice
