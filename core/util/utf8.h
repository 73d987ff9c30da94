#pragma once
// Names in a damaged or hostile model need not be valid UTF-8 (protobuf-lite does not check), but
// reports and messages must be: invalid sequences become U+FFFD.
#include <string>
#include <string_view>

namespace lattice {

std::string valid_utf8(std::string_view text);

}  // namespace lattice
