#include "core/graph/operator_rules.h"

#include <fmt/ranges.h>

#include "core/onnx/attributes.h"
#include "core/onnx/domain.h"

namespace lattice {
namespace {

class NodeRules {
 public:
  NodeRules(const GraphView& view, const Shapes& shapes, int index)
      : node_(view.node(index)), label_(view.label(index)), shapes_(shapes) {}

  Status check() {
    const std::string& op = node_.op_type();
    if (op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool") return check_window();
    if (op == "BatchNormalization") return check_batch_norm();
    return ok_status();
  }

 private:
  template <typename... Args>
  Error fail(fmt::format_string<Args...> format, Args&&... args) const {
    return error("node '{}' ({}): {}", label_, node_.op_type(), fmt::format(format, std::forward<Args>(args)...));
  }

  const Shape* input_shape(int i) const {
    return i < node_.input_size() && !node_.input(i).empty() ? shapes_.of(node_.input(i)) : nullptr;
  }

  // `name` has `rank` entries, each at least `min`.
  Status check_ints(std::string_view name, size_t rank, int64_t min) const {
    auto values = attr::get_ints(node_, name);
    if (!values) return ok_status();
    if (values->size() != rank) {
      return fail("attribute '{}' has {} values {}, the window has rank {} (needs {})", name, values->size(),
                  *values, rank / (name == "pads" ? 2 : 1), rank);
    }
    for (int64_t v : *values) {
      if (v < min) return fail("attribute '{}' is {}; every value must be at least {}", name, *values, min);
    }
    return ok_status();
  }

  Status check_window() {
    const bool conv = node_.op_type() == "Conv" || node_.op_type() == "ConvTranspose";
    const Shape* weight = conv ? input_shape(1) : nullptr;
    auto kernel = attr::get_ints(node_, "kernel_shape");
    size_t rank = kernel ? kernel->size() : 0;
    if (!kernel && weight) rank = weight->size() >= 2 ? weight->size() - 2 : 0;
    if (!kernel && !conv) return fail("attribute 'kernel_shape' is missing (required)");
    if (rank == 0) return kernel ? fail("attribute 'kernel_shape' is empty") : ok_status();
    if (auto s = check_ints("kernel_shape", rank, 1); !s) return s;
    if (auto s = check_ints("strides", rank, 1); !s) return s;
    if (auto s = check_ints("dilations", rank, 1); !s) return s;
    if (auto s = check_ints("pads", 2 * rank, 0); !s) return s;
    if (const Shape* in = input_shape(0); in && in->size() != rank + 2) {
      return fail("input '{}' has shape {}, but the window has rank {}", node_.input(0), format_shape(*in), rank);
    }
    if (!conv || !weight) return ok_status();

    if (kernel && weight->size() != rank + 2) {
      return fail("weight '{}' has shape {}; kernel_shape {} needs a weight of rank {}", node_.input(1),
                  format_shape(*weight), *kernel, rank + 2);
    }
    for (size_t i = 0; kernel && i < rank; ++i) {
      int64_t w = (*weight)[i + 2];
      if (w >= 0 && w != (*kernel)[i]) {
        return fail("attribute 'kernel_shape' is {}, but weight '{}' has shape {}", *kernel, node_.input(1),
                    format_shape(*weight));
      }
    }
    return check_group(*weight);
  }

  // Conv weight [M, C/group, k...]; ConvTranspose weight [C, M/group, k...].
  Status check_group(const Shape& weight) {
    int64_t group = attr::get_int(node_, "group", 1);
    if (group < 1) return fail("attribute 'group' is {}; it must be at least 1", group);
    const bool transpose = node_.op_type() == "ConvTranspose";
    if (weight[0] >= 0 && weight[0] % group != 0) {
      return fail("attribute 'group' is {}, which does not divide the {} channels of weight '{}' {}", group,
                  transpose ? "input" : "output", node_.input(1), format_shape(weight));
    }
    const Shape* in = input_shape(0);
    int64_t in_channels = in ? (*in)[1] : -1;
    int64_t expected = transpose ? weight[0] : (weight[1] >= 0 ? weight[1] * group : -1);
    if (in_channels >= 0 && expected >= 0 && in_channels != expected) {
      return fail("input '{}' has {} channels, but weight '{}' {} with group {} takes {}", node_.input(0), in_channels,
                  node_.input(1), format_shape(weight), group, expected);
    }
    return ok_status();
  }

  Status check_batch_norm() {
    const Shape* in = input_shape(0);
    int64_t channels = in && in->size() >= 2 ? (*in)[1] : -1;
    static constexpr const char* kParams[] = {"scale", "B", "mean", "var"};
    for (int i = 1; i <= 4 && i < node_.input_size(); ++i) {
      const Shape* p = input_shape(i);
      if (!p) continue;
      if (p->size() != 1) {
        return fail("{} '{}' has shape {}; it must be one value per channel", kParams[i - 1], node_.input(i),
                    format_shape(*p));
      }
      if ((*p)[0] < 0) continue;
      if (channels < 0) channels = (*p)[0];
      if ((*p)[0] != channels) {
        return fail("{} '{}' has {} values, but the input has {} channels", kParams[i - 1], node_.input(i), (*p)[0],
                    channels);
      }
    }
    return ok_status();
  }

  const onnx::NodeProto& node_;
  std::string label_;
  const Shapes& shapes_;
};

}  // namespace

Status check_operator_rules(const GraphView& view, const Shapes& shapes) {
  for (int i = view.first(); i >= 0; i = view.next(i)) {
    if (!is_default_domain(view.node(i).domain())) continue;
    if (auto s = NodeRules(view, shapes, i).check(); !s) return s;
  }
  return ok_status();
}

}  // namespace lattice
