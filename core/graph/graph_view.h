#pragma once
// An index over a GraphProto: who produces and who reads each tensor (reads inside If/Loop/Scan
// bodies included), which tensors are constants, and the order of the nodes. Its edits (replace,
// remove, the initializer and input entries) keep every part of the index whole; the Rewriter
// makes them as it edits the graph (only where the graph changed), so the engine never rebuilds
// the index per rewrite.
//
// Nodes are named by ids that stay put while the Rewriter edits: on a fresh view the id is the
// node's index in the graph; removed ids stay dead and new nodes get new ids. Walk the nodes in
// graph order with first()/next().
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "onnx-ml.pb.h"

namespace lattice {

class GraphView {
 public:
  // Nodes are labelled by name; unnamed ones `<op_type>_<index>` by their index in the model as
  // it was loaded, and repeated names `name#2`, ... in model order. `labels` maps such a node's
  // first output to its label, so the label stays put while nodes move.
  using Labels = std::unordered_map<std::string, std::string>;
  // `ir_version`: before IR 4 every initializer is also listed as a graph input, and such inputs
  // are constants (onnxruntime reads them so too); from IR 4 on, an initializer that is also a
  // graph input is a default that the caller may override, so it is not a constant.
  explicit GraphView(const onnx::GraphProto& graph, const Labels* labels = nullptr, int64_t ir_version = 8);
  static Labels original_labels(const onnx::GraphProto& graph);

  // The GraphProto the view was built from. While the Rewriter edits, its node list also holds
  // removed nodes and is not in order; the view is the truth until Rewriter::finish().
  const onnx::GraphProto& graph() const { return graph_; }
  // One past the largest node id; ids below it may be dead (see alive()).
  int size() const { return static_cast<int>(nodes_.size()); }
  const onnx::NodeProto& node(int id) const { return *nodes_[id]; }
  bool alive(int id) const { return alive_[id] != 0; }
  // The graph's nodes in order: first() then next() until -1. next() of a removed node leads to
  // the first live node after where it was.
  int first() const { return first_; }
  int next(int id) const;
  // Whether live node `a` comes before live node `b` in the graph.
  bool before(int a, int b) const { return order_[a] < order_[b]; }
  // The node's unique label: its name, `<op_type>_<index>` if unnamed, `name#k` if repeated.
  std::string label(int id) const;

  // Id of the node writing `name`, or -1 (graph input, initializer, or nothing).
  int producer(const std::string& name) const;
  // Nodes of this graph reading `name` as an explicit input, in node order, each once.
  const std::vector<int>& consumers(const std::string& name) const;
  // Nodes whose subgraphs read `name`, each once.
  const std::vector<int>& implicit_readers(const std::string& name) const;
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
  // The index of `name` in graph.output (its first), or -1.
  int output_index(const std::string& name) const;

  // --- Edits. The GraphProto is the caller's to change; these keep the index in step. ---

  // Live node `id`'s place in the graph order as a number: a < b in the order iff key(a) < key(b).
  uint64_t order_key(int id) const { return order_[id]; }
  // The live node before live node `id`, or -1.
  int previous(int id) const { return prev_[id]; }
  // Order keys for `count` new nodes between live nodes `before` and `after` (-1: the start or
  // the end of the graph): the k-th (from 0) takes low + step * (k + 1). nullopt when the keys
  // between the two ran out: the caller rebuilds the view, which spaces them anew.
  struct Slots {
    uint64_t low, step;
  };
  std::optional<Slots> slots_between(int before, int after, size_t count) const;
  // `nodes` (held by the caller's GraphProto) take the place of live node `at` in the order, in
  // the given order and with the keys of `slots`, and the nodes `removed` (`at` among them) go;
  // the new nodes are indexed as the writers of what the removed ones wrote. Returns their ids.
  std::vector<int> replace(const std::vector<int>& removed, int at, const std::vector<const onnx::NodeProto*>& nodes,
                           const Slots& slots);
  // Live node `id` goes: out of the index and the order. Its id stays dead, and a walk that stood
  // on it goes on where it would have.
  void remove(int id);
  // An initializer the graph gained; before IR 4 it is listed as a graph input too.
  void add_initializer(const onnx::TensorProto& init, bool listed_as_input);
  // The initializer and the graph input named `name` are gone (each if it was there).
  void forget_initializer(const std::string& name) { initializers_.erase(name); }
  void forget_input(const std::string& name) { inputs_.erase(name); }

 private:
  // Order keys are spaced this far apart, so nodes can be inserted between two neighbours many
  // times before the view has to be rebuilt to space them anew.
  static constexpr uint64_t kOrderGap = uint64_t{1} << 40;

  int position(int id) const;  // the index in graph order, by walking: only for unnamed labels
  void link(int id);           // indexes a node's reads and writes
  void unlink(int id);         // removes them again
  void unlist(int id);         // out of the order, marked dead

  const onnx::GraphProto& graph_;
  const Labels* labels_;
  bool initializer_inputs_overridable_;
  bool edited_ = false;
  std::vector<const onnx::NodeProto*> nodes_;  // by id
  std::vector<char> alive_;
  std::vector<uint64_t> order_;     // increasing along the graph order
  std::vector<int> prev_, next_;    // the graph order as a list; -1 at the ends
  int first_ = -1, last_ = -1;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<int>> consumers_;
  std::unordered_map<std::string, std::vector<int>> implicit_readers_;
  std::unordered_map<std::string, int> outputs_;  // name -> its first index in graph.output
  std::unordered_set<std::string> inputs_;
  std::unordered_map<std::string, const onnx::TensorProto*> initializers_;
};

}  // namespace lattice
