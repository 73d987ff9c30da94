#pragma once
// A part of a model as a model of its own: the nodes that compute some tensors from others the
// caller holds, with the initializers they read. The repair runs a model layer by layer; running
// the whole model for every layer cost one full pass per refitted layer (two before a Relu),
// where running only the part between the tensors it holds and the next layer's costs about one
// pass in all. The nodes, initializers and the model's other fields are copied as they are, so
// the part computes what the whole does.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/graph/graph_view.h"
#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice::repair {

// A tensor the caller holds: its element type and dims, the first of which (the samples) the part
// leaves free, so that every batch runs in one session.
struct GivenTensor {
  int32_t element_type = 0;
  std::vector<int64_t> dims;
};
using GivenTensors = std::map<std::string, GivenTensor>;

struct Part {
  std::string bytes;
  std::vector<std::string> inputs;  // the given tensors it reads, in the order its nodes first do
  std::vector<int> nodes;           // the model's nodes it runs, by index, in the model's order
};

// One model's graph indexed for cutting parts of it. The model must stay where it is, unchanged,
// while this lives: after an edit, index it again.
class ModelParts {
 public:
  explicit ModelParts(const onnx::ModelProto& model);

  const onnx::ModelProto& model() const { return model_; }
  const GraphView& view() const { return view_; }
  // The names node `index` reads: its inputs, then what its subgraphs (If, Loop, Scan) read of
  // the graphs around them.
  const std::vector<std::string>& reads(int index) const { return reads_[static_cast<size_t>(index)]; }

  // The nodes (indices, in the model's order) that compute `wanted` from the names `given` says
  // the caller holds: every node writing a wanted name not given, and what those read, back to
  // given names, initializers and graph inputs.
  std::vector<int> nodes_for(const std::function<bool(const std::string&)>& given,
                             const std::vector<std::string>& wanted) const;

  // The part computing `outputs` from `given`. Errors: a name it needs that is neither given,
  // computed in it, nor an initializer (a name only a subgraph reads excepted: it may be one the
  // subgraph makes itself), an output no node computes from what was given.
  Result<Part> cut(const GivenTensors& given, const std::vector<std::string>& outputs) const;

 private:
  const onnx::ModelProto& model_;
  GraphView view_;
  std::vector<std::vector<std::string>> reads_;
  std::map<std::string, const onnx::SparseTensorProto*> sparse_;
};

}  // namespace lattice::repair
