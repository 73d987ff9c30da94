#pragma once
// One uniquifier for every new node and tensor name: deterministic (derived from the replaced
// node's name, then _1, _2, ...) and unique across the graph and its subgraphs.
#include <string>
#include <unordered_set>

#include "onnx-ml.pb.h"

namespace lattice {

class NameAllocator {
 public:
  explicit NameAllocator(const onnx::GraphProto& graph);
  // `base` itself if unused, else base_1, base_2, ...; the name is then taken.
  std::string fresh(const std::string& base);

 private:
  void collect(const onnx::GraphProto& graph);
  std::unordered_set<std::string> taken_;
};

}  // namespace lattice
