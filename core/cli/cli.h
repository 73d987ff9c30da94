#pragma once
// `onnx-lattice convert | inspect | patterns`: flags, output and exit status (SPEC section 4).
#include <string>
#include <vector>

#include "core/cli/exit_status.h"
#include "core/cli/host.h"
#include "core/util/result.h"

namespace lattice {

// `args` excludes the program name.
int run_cli(const std::vector<std::string>& args, Host& host);

}  // namespace lattice
