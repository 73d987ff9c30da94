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
Result<std::vector<double>> constant_values(const MatchContext& ctx, const onnx::NodeProto& node, int input,
                                            std::string_view role);

// The layer `layer_index` with `affine` folded into new weight and bias tensors (originals are
// never modified: another node may share them), writing `output`. `source` names what is folded
// ("BatchNormalization 'bn'") for the messages; `suffix` ends the new tensors' names.
Result<Replacement> fold_channel_affine(const MatchContext& ctx, int layer_index, const ChannelAffine& affine,
                                        const std::string& output, std::string_view source, std::string_view suffix,
                                        NameAllocator& names);

}  // namespace lattice
