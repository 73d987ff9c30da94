#pragma once
// Which values one per-channel scale moves through. FPQ's range fit divides a BatchNormalization's
// output channel by s and multiplies the weights that read it by s; that is exact only if every
// value between them is positive-homogeneous in that channel (f(x / s) = f(x) / s for s > 0):
//   - Relu, LeakyRelu, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, Resize/Upsample
//     (channels kept), Identity, Dropout, and Flatten on axis 1 (each channel's values stay
//     together, so a dense layer reads them as one block per channel);
//   - Concat on the channel axis: input i's channel c is the output's channel offset_i + c;
//   - Add: both inputs and the output carry channel c with one scale, so the BatchNormalizations
//     that write both branches (a residual stream, across its blocks) take the same s.
// The values joined so form one group per channel: its producers (BatchNormalization output
// channels that divide by s), its consumers (a Conv's or Gemm's input channels whose constant
// weights multiply by s) and its tensors (the values held in FPQ, whose ranges bound s). A group
// that any other reader or writer touches (a graph output, a Sigmoid, a constant added, weights
// that another node shares) keeps scale 1.
// Only the graph here: the numbers are core/fixed_point/channel_scale.h's.
#include <functional>
#include <string>
#include <vector>

#include "core/graph/graph_view.h"
#include "core/graph/shapes.h"

namespace lattice::fixed_point {

struct ChannelOf {
  std::string tensor;
  size_t channel = 0;
  bool operator==(const ChannelOf&) const = default;
};

struct NodeChannel {
  int node = -1;
  size_t channel = 0;   // a producer's output channel, a consumer's input channel
  size_t channels = 0;  // how many the tensor it writes or reads has (a Flatten's: its input's)
};

struct ScaleGroup {
  std::vector<ChannelOf> values;      // every tensor channel the scale moves through
  std::vector<NodeChannel> producers;  // BatchNormalization output channels
  std::vector<NodeChannel> consumers;  // layer input channels whose weights take the scale back
  bool through_add = false;            // joins branches at an Add
  bool frozen = false;                 // the group keeps scale 1: another node reads or writes it
};

struct GroupRules {
  // A BatchNormalization that can divide its output by s (float constant parameters, each read by
  // it alone).
  std::function<bool(int node)> producer;
  // A layer that takes a scale on input 0 into its constant weights (read by it alone).
  std::function<bool(int node)> consumer;
};

struct ScaleGroups {
  std::vector<ScaleGroup> groups;
  std::vector<size_t> of_channel;  // per output channel of the BatchNormalization, its group
};

// The groups of `bn`'s output channels; none when its channel count is not known.
ScaleGroups scale_groups(const GraphView& view, const Shapes& shapes, int bn, const GroupRules& rules);

}  // namespace lattice::fixed_point
