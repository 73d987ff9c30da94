#include "core/activation_idioms.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

#include "core/onnx/domain.h"

namespace lattice {
namespace {

// Ops an elementwise activation is written with; Clip's min and max must be constants.
const std::set<std::string>& idiom_ops() {
  static const std::set<std::string> ops{"Sigmoid", "HardSigmoid", "Tanh", "Softplus", "Erf", "Clip",
                                         "Add",     "Sub",         "Mul",  "Div"};
  return ops;
}

// The op that is an activation by itself, and the name the audit gives it.
const std::map<std::string, std::string>& single_op_idioms() {
  static const std::map<std::string, std::string> ops{
      {"HardSwish", "HardSwish"}, {"HardSigmoid", "HardSigmoid"}, {"Mish", "Mish"}, {"Gelu", "GELU"}};
  return ops;
}

struct Unit {
  std::vector<int> nodes;
  std::unordered_set<std::string> tensors;  // x and every output of the unit's nodes
  int mixes = 0;                            // binary nodes with two non-constant operands (x * f(x))
  std::map<std::string, int> ops;
};

// Whether `node` computes an elementwise function of the unit's tensors: every non-constant
// input is one of them, and at least one is.
bool extends(const GraphView& view, const Unit& unit, const onnx::NodeProto& node, bool& mixes) {
  if (!is_default_domain(node.domain()) || !idiom_ops().contains(node.op_type()) || node.output_size() != 1) {
    return false;
  }
  int from_unit = 0, constants = 0;
  for (int i = 0; i < node.input_size(); ++i) {
    const auto& in = node.input(i);
    if (in.empty()) continue;
    if (unit.tensors.contains(in)) {
      ++from_unit;
    } else if (view.constant(in)) {
      ++constants;
    } else {
      return false;
    }
    if (i > 0 && node.op_type() == "Clip" && !view.constant(in)) return false;
  }
  mixes = from_unit == 2;
  return from_unit > 0;
}

// The activation `unit` is, by the ops it is made of; empty if none.
std::pair<std::string, std::string> classify(const Unit& u) {
  auto has = [&](const char* op) { return u.ops.contains(op) ? u.ops.at(op) : 0; };
  const size_t kinds = u.ops.size();
  if (u.mixes == 1 && has("Sigmoid") == 1 && has("Mul") == 1 && kinds == 2) return {"SiLU", "x*Sigmoid(x)"};
  if (u.mixes == 1 && has("HardSigmoid") == 1 && has("Mul") == 1 && kinds == 2) return {"HardSwish", "x*HardSigmoid(x)"};
  if (u.mixes == 1 && has("Tanh") == 1 && has("Softplus") == 1 && has("Mul") == 1 && kinds == 3) {
    return {"Mish", "x*Tanh(Softplus(x))"};
  }
  auto only = [&](std::initializer_list<const char*> allowed) {
    for (const auto& entry : u.ops) {
      const std::string& op = entry.first;  // a structured binding cannot be captured in clang 14
      if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return op == a; })) return false;
    }
    return true;
  };
  if (has("Erf") == 1 && u.mixes == 1 && only({"Erf", "Add", "Mul", "Div"})) return {"GELU", "x*(1+Erf(x/sqrt(2)))/2"};
  if (has("Clip") == 1 && has("Add") >= 1 && has("Div") + has("Mul") >= 1 && only({"Clip", "Add", "Mul", "Div"})) {
    if (u.mixes == 1) return {"HardSwish", "x*Clip(x+3, 0, 6)/6"};
    if (u.mixes == 0) return {"HardSigmoid", "Clip(x/6+1/2, 0, 1)"};
  }
  return {};
}

}  // namespace

std::vector<ActivationIdiom> find_activation_idioms(const GraphView& view) {
  std::vector<ActivationIdiom> idioms;
  std::vector<bool> taken(static_cast<size_t>(view.size()), false);
  // Grow a unit from every tensor x, node by node in graph order, and keep the largest prefix
  // that is a known activation whose intermediate tensors nothing outside reads.
  auto grow_from = [&](const std::string& x) {
    Unit unit;
    unit.tensors.insert(x);
    std::optional<ActivationIdiom> best;
    std::vector<int> frontier(view.consumers(x).begin(), view.consumers(x).end());
    constexpr size_t kMaxNodes = 8;  // the longest idiom (GELU, HardSwish) has 5
    while (!frontier.empty() && unit.nodes.size() < kMaxNodes) {
      std::sort(frontier.begin(), frontier.end());
      int next = -1;
      bool mixes = false;
      for (int c : frontier) {
        if (!taken[static_cast<size_t>(c)] && std::find(unit.nodes.begin(), unit.nodes.end(), c) == unit.nodes.end() &&
            extends(view, unit, view.node(c), mixes)) {
          next = c;
          break;
        }
      }
      if (next < 0) break;
      frontier.erase(std::find(frontier.begin(), frontier.end(), next));
      unit.nodes.push_back(next);
      unit.mixes += mixes ? 1 : 0;
      ++unit.ops[view.node(next).op_type()];
      const std::string& out = view.node(next).output(0);
      unit.tensors.insert(out);
      for (int c : view.consumers(out)) frontier.push_back(c);
      auto [name, form] = classify(unit);
      if (name.empty()) continue;
      // One result: every tensor but the last is read only by the unit's own nodes.
      bool closed = true;
      for (int n : unit.nodes) {
        const std::string& o = view.node(n).output(0);
        if (o == out) continue;
        int inside = 0;
        for (int c : view.consumers(o)) inside += std::find(unit.nodes.begin(), unit.nodes.end(), c) != unit.nodes.end();
        closed = closed && inside == view.reader_count(o);
      }
      if (closed) {
        std::vector<int> nodes = unit.nodes;
        std::sort(nodes.begin(), nodes.end());
        best = ActivationIdiom{name, form, x, nodes};
      }
    }
    if (!best) return;
    for (int n : best->nodes) taken[static_cast<size_t>(n)] = true;
    idioms.push_back(std::move(*best));
  };
  for (const auto& in : view.graph().input()) grow_from(in.name());
  for (int i = 0; i < view.size(); ++i) {
    for (const auto& out : view.node(i).output()) {
      if (!out.empty()) grow_from(out);
    }
  }
  // What is left of the ops that are an activation by themselves.
  for (int i = 0; i < view.size(); ++i) {
    const auto& node = view.node(i);
    auto single = single_op_idioms().find(node.op_type());
    if (single != single_op_idioms().end() && is_default_domain(node.domain()) && !taken[static_cast<size_t>(i)]) {
      taken[static_cast<size_t>(i)] = true;
      idioms.push_back({single->second, node.op_type() + " op", node.input_size() > 0 ? node.input(0) : "", {i}});
    }
  }
  return idioms;
}

}  // namespace lattice
