#pragma once
// The human-readable form of a report, printed by the CLIs (the JSON form is Report::to_json).
#include <string>

#include "core/report/report.h"

namespace lattice {

std::string format_summary(const Report& report, const std::string& input_name, const std::string& output_name);

}  // namespace lattice
