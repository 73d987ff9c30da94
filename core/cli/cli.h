#pragma once
// `onnx-lattice convert | inspect | patterns`: flags, output and exit status (SPEC section 4).
#include <string>
#include <vector>

#include "core/cli/host.h"

namespace lattice {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRejected = 1;
inline constexpr int kExitUsage = 2;

// `args` excludes the program name.
int run_cli(const std::vector<std::string>& args, Host& host);

}  // namespace lattice
