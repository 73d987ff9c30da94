#pragma once
// Names in a damaged or hostile model need not be valid UTF-8 (protobuf-lite does not check), nor
// free of control characters, but reports and messages must be both.
#include <string>
#include <string_view>

namespace lattice {

// Invalid sequences become U+FFFD.
std::string valid_utf8(std::string_view text);

// valid_utf8, with control characters (C0, DEL, C1, U+2028/U+2029) escaped as `\n`, `\t`, `\r`,
// `\0` or `\xNN` / `\uNNNN`: a message built from names is always one line of plain text, so a
// name like "K\nonnx-lattice: ok" cannot forge a line of the tool's own output.
std::string printable(std::string_view text);

}  // namespace lattice
