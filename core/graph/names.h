#pragma once
// One uniquifier for every new node and tensor name: deterministic (derived from the replaced
// node's name, then _1, _2, ...) and unique across the graph and its subgraphs. The Rewriter
// keeps it current (take/release as names enter and leave the graph), so it is built once.
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "onnx-ml.pb.h"

namespace lattice {

class NameAllocator {
 public:
  explicit NameAllocator(const onnx::GraphProto& graph);
  // `base` itself if unused, else base_1, base_2, ...; the name is then taken until
  // forget_unused() (if the graph does not take it for real by then).
  std::string fresh(const std::string& base);

  // Names entering or leaving the graph, counted: a name is free once nothing holds it.
  void take(const std::string& name) { ++taken_[name]; }
  void release(const std::string& name);
  // A node's name, its outputs and everything named in its subgraphs.
  void take(const onnx::NodeProto& node);
  void release(const onnx::NodeProto& node);
  // Drops what fresh() handed out: a graft's names last for one match, as if the allocator were
  // built anew from the graph for each match.
  void forget_unused() { handed_out_.clear(); }

 private:
  void collect(const onnx::GraphProto& graph, int delta);
  void count(const onnx::NodeProto& node, int delta);
  void count(const std::string& name, int delta);
  std::unordered_map<std::string, int> taken_;
  std::unordered_set<std::string> handed_out_;
};

}  // namespace lattice
