#pragma once
// A target, as the engine sees it: a name, the conversion patterns it runs in order, and the
// hardware its audit asks what cannot run. What a target's hardware accepts (kernels, strides,
// pool forms, operator rows and their sources) belongs to the target's own layer: the Lattice
// targets are one table, core/patterns/lattice/targets.cc.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lattice {

struct MatchContext;
struct Pattern;

// What an accelerator runs. The engine asks only the audit's question; the patterns written for
// the hardware read its limits through their own layer (core/patterns/lattice/hardware.h).
class Hardware {
 public:
  virtual ~Hardware() = default;
  // Why the hardware cannot run `node`, or nullopt when it can.
  virtual std::optional<std::string> unsupported_reason(const MatchContext& ctx, int node) const = 0;
};

struct Target {
  std::string_view name;
  std::string_view description;
  std::vector<const Pattern*> conversion;  // the conversion phase, in the order they run
  // Null: no accelerator (the folds alone, nothing to audit beyond BatchNormalization).
  std::shared_ptr<const Hardware> hardware;
};

}  // namespace lattice
