#include "core/onnx/validate.h"

#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/onnx/external_data.h"
#include "core/onnx/naming.h"
#include "core/onnx/subgraph.h"
#include "core/onnx/tensor_data.h"

namespace lattice {
namespace {

// The tensors a graph can read: its own definitions, then those of the graphs around it.
struct Scope {
  const Scope* outer = nullptr;
  std::unordered_map<std::string, std::string> definer;  // name -> who defines it, for messages

  bool defines(const std::string& name) const {
    for (const Scope* s = this; s; s = s->outer) {
      if (s->definer.contains(name)) return true;
    }
    return false;
  }
};

std::string describe(const onnx::NodeProto& node, int index) {
  return fmt::format("node '{}' ({})", node_label(node, index), node.op_type());
}

class GraphValidator {
 public:
  GraphValidator(const onnx::GraphProto& graph, const Scope* outer, std::string where, ExternalData* data)
      : graph_(graph), where_(std::move(where)), data_(data) {
    scope_.outer = outer;
  }

  Status run() {
    if (auto s = define_inputs_and_initializers(); !s) return s;
    if (auto s = define_node_outputs(); !s) return s;
    if (auto s = check_reads(); !s) return s;
    if (auto s = check_subgraphs(); !s) return s;
    return check_acyclic();
  }

 private:
  Status define(const std::string& name, std::string who) {
    auto [it, inserted] = scope_.definer.emplace(name, who);
    if (!inserted) return error("{}: tensor '{}' is defined twice, by {} and by {}", where_, name, it->second, who);
    return ok_status();
  }

  Status define_inputs_and_initializers() {
    for (const auto& input : graph_.input()) {
      if (auto s = define(input.name(), "a graph input"); !s) return s;
    }
    for (const auto& init : graph_.initializer()) {
      std::string what = fmt::format("initializer '{}'", init.name());
      if (init.name().empty()) return error("{}: an initializer has no name", where_);
      if (auto s = check_data(init, what); !s) return s;
      // Before IR version 4 every initializer is also a graph input: that is not a redefinition.
      auto it = scope_.definer.find(init.name());
      if (it != scope_.definer.end() && it->second == "a graph input") continue;
      if (auto s = define(init.name(), what); !s) return s;
    }
    for (const auto& sparse : graph_.sparse_initializer()) {
      std::string what = fmt::format("sparse initializer '{}'", sparse.values().name());
      if (auto s = check_data(sparse.values(), what); !s) return s;
      if (auto s = check_data(sparse.indices(), what + " indices"); !s) return s;
      if (auto s = define(sparse.values().name(), what); !s) return s;
    }
    return ok_status();
  }

  Status define_node_outputs() {
    for (int i = 0; i < graph_.node_size(); ++i) {
      const auto& node = graph_.node(i);
      if (node.op_type().empty()) return error("{}: node '{}' has no op_type", where_, node_label(node, i));
      for (const auto& output : node.output()) {
        if (output.empty()) continue;  // an omitted optional output
        if (auto s = define(output, describe(node, i)); !s) return s;
      }
      for (const auto& attr : node.attribute()) {
        std::string what = fmt::format("attribute '{}' of {}", attr.name(), describe(node, i));
        if (attr.has_t()) {
          if (auto s = check_data(attr.t(), what); !s) return s;
        }
        for (const auto& t : attr.tensors()) {
          if (auto s = check_data(t, what); !s) return s;
        }
      }
    }
    return ok_status();
  }

  Status check_reads() const {
    for (int i = 0; i < graph_.node_size(); ++i) {
      const auto& node = graph_.node(i);
      for (const auto& input : node.input()) {
        if (!input.empty() && !scope_.defines(input)) {
          return error("{}: {} reads '{}', which no node, graph input or initializer produces", where_,
                       describe(node, i), input);
        }
      }
    }
    for (const auto& output : graph_.output()) {
      if (!scope_.defines(output.name())) {
        return error("{}: graph output '{}' is not produced by any node, input or initializer", where_, output.name());
      }
    }
    return ok_status();
  }

  Status check_subgraphs() const {
    for (int i = 0; i < graph_.node_size(); ++i) {
      const auto& node = graph_.node(i);
      Status status = ok_status();
      for_each_subgraph(node, [&](const onnx::GraphProto& body) {
        if (!status) return;
        std::string where = fmt::format("{} > subgraph '{}' of {}", where_, body.name(), describe(node, i));
        status = GraphValidator(body, &scope_, where, data_).run();
      });
      if (!status) return status;
    }
    return ok_status();
  }

  // Kahn's algorithm over this graph's nodes; subgraph reads count as inputs of their node.
  Status check_acyclic() const {
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < graph_.node_size(); ++i) {
      for (const auto& output : graph_.node(i).output()) {
        if (!output.empty()) producer[output] = i;
      }
    }
    std::vector<std::vector<int>> consumers(graph_.node_size());
    std::vector<int> pending(graph_.node_size(), 0);
    for (int i = 0; i < graph_.node_size(); ++i) {
      const auto& node = graph_.node(i);
      auto depend = [&](const std::string& name) {
        auto it = producer.find(name);
        if (it == producer.end()) return;
        consumers[it->second].push_back(i);
        ++pending[i];
      };
      for (const auto& input : node.input()) depend(input);
      for (const auto& name : implicit_inputs(node)) depend(name);
    }
    std::deque<int> ready;
    for (int i = 0; i < graph_.node_size(); ++i) {
      if (pending[i] == 0) ready.push_back(i);
    }
    int sorted = 0;
    while (!ready.empty()) {
      int i = ready.front();
      ready.pop_front();
      ++sorted;
      for (int c : consumers[i]) {
        if (--pending[c] == 0) ready.push_back(c);
      }
    }
    if (sorted == graph_.node_size()) return ok_status();
    for (int i = 0; i < graph_.node_size(); ++i) {
      if (pending[i] > 0) return error("{}: the graph has a cycle through {}", where_, describe(graph_.node(i), i));
    }
    return ok_status();
  }

  // Inline data against the dims; an external reference against its file, reading nothing.
  Status check_data(const onnx::TensorProto& t, const std::string& what) const {
    if (!is_external(t)) return check_tensor_data(t, what);
    std::string location;
    for (const auto& entry : t.external_data()) {
      if (entry.key() == "location") location = entry.value();
    }
    if (!data_ || (location != kInputLocation && !data_->has_files())) {
      if (auto s = check_location(location, what); !s) return s;
      return error("{} keeps its data in an external file ('{}'), and no data files were given to read it from", what,
                   location);
    }
    auto ref = external_ref(t, what, *data_);
    if (!ref) return ref.error();
    return ok_status();
  }

  const onnx::GraphProto& graph_;
  std::string where_;
  ExternalData* data_;
  Scope scope_;
};

}  // namespace

Status validate_model(const onnx::ModelProto& model, ExternalData* data) {
  if (!model.has_graph()) return error("not an ONNX model: it has no graph (ModelProto.graph is missing)");
  if (model.ir_version() <= 0) return error("ModelProto.ir_version is missing");
  if (model.opset_import_size() == 0) return error("ModelProto.opset_import is empty: the model names no operator set");
  return GraphValidator(model.graph(), nullptr, fmt::format("graph '{}'", model.graph().name()), data).run();
}

}  // namespace lattice
