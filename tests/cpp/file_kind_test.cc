// What a file given as a model is, when its first bytes say: every shell's "not an ONNX model".
#include "core/onnx/file_kind.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/onnx/model_io.h"
#include "tests/cpp/support.h"

using lattice::file_kind;
using lattice::parse_model;

namespace {

std::vector<uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }

// A ZIP local file header whose first entry is `name`.
std::vector<uint8_t> zip_with(const std::string& name) {
  std::vector<uint8_t> z(30, 0);
  z[0] = 'P', z[1] = 'K', z[2] = 3, z[3] = 4;
  z[26] = static_cast<uint8_t>(name.size());
  z.insert(z.end(), name.begin(), name.end());
  return z;
}

std::string parse_error(const std::vector<uint8_t>& bytes) {
  auto m = parse_model(bytes);
  REQUIRE_FALSE(m.ok());
  return m.error().message;
}

}  // namespace

TEST_CASE("the formats a model is mistaken for are named by their first bytes", "[file_kind]") {
  CHECK(file_kind(std::vector<uint8_t>{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}) == "a PNG image");
  CHECK(file_kind(std::vector<uint8_t>{0xff, 0xd8, 0xff, 0xe0, 0, 16}) == "a JPEG image");
  CHECK(file_kind(std::vector<uint8_t>{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0}) == "a NumPy array (.npy)");
  CHECK(file_kind(zip_with("image.npy")) == "a NumPy archive (.npz)");
  CHECK(file_kind(zip_with("archive/data.pkl")).value_or("") ==
        "a PyTorch checkpoint (torch.save's ZIP archive: export the model to ONNX first)");
  CHECK(file_kind(zip_with("notes.txt")) == "a ZIP archive");
  CHECK(file_kind(bytes_of("version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 12\n")).value_or("") ==
        "a Git LFS pointer, not the file it points to (fetch it with git lfs pull)");
  CHECK(file_kind(bytes_of("\n  <!DOCTYPE html><html><head><title>404 Not Found</title></head><body>x</body></html>")).value_or("") ==
        "text, beginning “<!DOCTYPE html><html><head><title>404 Not Found</title></hea…”");
  // UTF-8 cut by the 512 bytes read is still text ("a" and then ü's: byte 512 is the second of
  // an ü), and the line shown is cut between characters (at 59 bytes, not inside the 30th ü).
  std::string text = "a";
  for (int i = 0; i < 300; ++i) text += "ü";
  CHECK(file_kind(bytes_of(text)) == "text, beginning “" + text.substr(0, 59) + "…”");
  // A model's first bytes are a field tag and a control byte: nothing is named, and an empty
  // file neither.
  CHECK_FALSE(file_kind(bytes_of(test::tiny_model().SerializeAsString())).has_value());
  CHECK_FALSE(file_kind(std::span<const uint8_t>{}).has_value());
  CHECK_FALSE(file_kind(std::vector<uint8_t>{'a', 0, 'b'}).has_value());
}

TEST_CASE("a model that does not decode says what it is when its first bytes say", "[file_kind]") {
  CHECK(parse_error({0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13}) == "not an ONNX model: it is a PNG image");
  CHECK(parse_error(bytes_of("version https://git-lfs.github.com/spec/v1\n")) ==
        "not an ONNX model: it is a Git LFS pointer, not the file it points to (fetch it with git lfs pull)");
  // Not text: a byte no UTF-8 sequence starts with.
  CHECK(parse_error({0x0a, 0xff, 0x01}) ==
        "not an ONNX model: the 3 bytes do not decode as an ONNX ModelProto (truncated or corrupted file?)");
}
