#pragma once
// A read-only index over a GraphProto: who produces and who reads each tensor (reads inside
// If/Loop/Scan bodies included), and which tensors are constants. Rebuilt after each rewrite.
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "onnx-ml.pb.h"

namespace lattice {

class GraphView {
 public:
  // Unnamed nodes are labelled `<op_type>_<index>` by their index in the model as it was loaded:
  // `labels` maps such a node's first output to that label, so it stays put while nodes move.
  using Labels = std::unordered_map<std::string, std::string>;
  // `ir_version`: before IR 4 every initializer is also listed as a graph input, and such inputs
  // are constants (onnxruntime reads them so too); from IR 4 on, an initializer that is also a
  // graph input is a default that the caller may override, so it is not a constant.
  explicit GraphView(const onnx::GraphProto& graph, const Labels* labels = nullptr, int64_t ir_version = 8);
  static Labels original_labels(const onnx::GraphProto& graph);

  const onnx::GraphProto& graph() const { return graph_; }
  int size() const { return graph_.node_size(); }
  const onnx::NodeProto& node(int i) const { return graph_.node(i); }
  // The node's name, or `<op_type>_<index>` for an unnamed node.
  std::string label(int i) const;

  // Index of the node writing `name`, or -1 (graph input, initializer, or nothing).
  int producer(const std::string& name) const;
  // Nodes of this graph reading `name` as an explicit input, in node order, each once.
  const std::vector<int>& consumers(const std::string& name) const;
  // Everything that reads `name`: explicit consumers, nodes whose subgraphs read it, graph outputs.
  int reader_count(const std::string& name) const;
  bool is_graph_output(const std::string& name) const { return outputs_.contains(name); }
  bool is_graph_input(const std::string& name) const { return inputs_.contains(name); }
  // A graph input that may be fed at run time (not an initializer listed as input before IR 4).
  bool is_overridable_input(const std::string& name) const {
    return is_graph_input(name) && (initializer_inputs_overridable_ || !initializers_.contains(name));
  }

  // A constant tensor: an initializer that is not also a graph input (it could be overridden at
  // run time then), or the `value` of a Constant node, read directly or through a chain of
  // Identity nodes (PyTorch's exporter reads a de-duplicated parameter as Identity(original)).
  // nullptr otherwise.
  const onnx::TensorProto* constant(const std::string& name) const;
  // What `name` is, for a message saying why it is not a constant: "graph input 'b'", "output of
  // Relu 'r'", "output of Identity '/Identity_3', which reads graph input 'b'".
  std::string describe(const std::string& name) const;
  const onnx::TensorProto* initializer(const std::string& name) const;

 private:
  const onnx::GraphProto& graph_;
  const Labels* labels_;
  bool initializer_inputs_overridable_;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<int>> consumers_;
  std::unordered_map<std::string, int> implicit_readers_;
  std::unordered_set<std::string> outputs_, inputs_;
  std::unordered_map<std::string, const onnx::TensorProto*> initializers_;
};

}  // namespace lattice
