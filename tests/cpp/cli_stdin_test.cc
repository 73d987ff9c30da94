// `-` as the input model (core/cli/model_input.cc, data_files.cc, convert_file.cc, cli.cc) over a
// file system in memory: standard input is converted as the same file would be, needs -o, is one
// model only, finds its data files in the current folder, and bad input on it is refused as a
// file's would be, with nothing written. (The node CLI tests run both CLIs on a real pipe.)
#include <catch2/catch.hpp>

#include "core/cli/cli.h"
#include "core/cli/convert_file.h"
#include "core/cli/data_files.h"
#include "core/cli/model_input.h"
#include "core/onnx/model_io.h"
#include "memory_host.h"
#include "support.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

// A host whose current folder "/" holds the sample as /m.onnx, its standard input the same bytes.
test::MemoryHost sample_host() {
  test::MemoryHost host;
  host.specials["/"] = FileStat::Kind::kDirectory;
  host.files["/m.onnx"] = test::fixture("sample.onnx");
  host.stdin_bytes = host.files["/m.onnx"];
  return host;
}

FileJob job(const std::string& input, const std::string& output) { return FileJob{input, output, "", Options{}, false}; }

}  // namespace

TEST_CASE("a model on standard input is converted as the same file would be") {
  auto host = sample_host();
  REQUIRE(convert_file(job("/m.onnx", "/from_file.onnx"), host));
  auto piped = convert_file(job("-", "/from_stdin.onnx"), host);
  REQUIRE(piped);
  CHECK(host.files.at("/from_stdin.onnx") == host.files.at("/from_file.onnx"));
  CHECK(piped->files == std::vector<std::string>{"/from_stdin.onnx"});
  // The whole of it was asked for, up to one byte past a model's limit.
  CHECK(host.stdin_asked == kMaxModelBytes + 1);

  SECTION("to standard output (- twice)") {
    REQUIRE(convert_file(job("-", "-"), host));
    CHECK(host.stdout_bytes == host.files.at("/from_file.onnx"));
  }
  SECTION("over the file it came from: read whole before anything is written") {
    std::string original = host.files.at("/m.onnx");
    REQUIRE(convert_file(job("-", "/m.onnx"), host));
    CHECK(host.files.at("/m.onnx") == host.files.at("/from_file.onnx"));
    CHECK(host.files.at("/m.onnx") != original);
  }
}

TEST_CASE("tensor data left in a model on standard input is written from the bytes held") {
  // x + w, w of 80 000 bytes: more than the skeleton reads (kReadAlways), so the output copies it
  // as a range of the input, which for standard input is held in memory.
  onnx::ModelProto m = test::tiny_model();
  auto* add = m.mutable_graph()->mutable_node(0);
  add->set_op_type("Add");
  add->add_input("w");
  onnx::TensorProto w = test::float_tensor("w", {20000}, {});
  std::string raw(80000, '\0');
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<char>(i * 7 % 251);
  w.set_raw_data(raw);
  *m.mutable_graph()->add_initializer() = w;
  test::MemoryHost host;
  host.specials["/"] = FileStat::Kind::kDirectory;
  host.files["/big.onnx"] = m.SerializeAsString();
  host.stdin_bytes = host.files["/big.onnx"];
  REQUIRE(convert_file(job("/big.onnx", "/from_file.onnx"), host));
  REQUIRE(convert_file(job("-", "/from_stdin.onnx"), host));
  CHECK(host.files.at("/from_stdin.onnx").find(raw) != std::string::npos);
  CHECK(host.files.at("/from_stdin.onnx") == host.files.at("/from_file.onnx"));
}

TEST_CASE("a model on standard input needs -o, unless nothing is written") {
  auto host = sample_host();
  auto refused = convert_file(job("-", ""), host);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().kind == ErrorKind::kOptions);
  CHECK_THAT(refused.error().message, Contains("give -o FILE (or -o - for standard output)"));
  CHECK(host.stdin_asked == 0);  // refused before reading it
  FileJob inspect = job("-", "");
  inspect.inspect = true;
  CHECK(convert_file(inspect, host));
  FileJob dry = job("-", "");
  dry.options.dry_run = true;
  CHECK(convert_file(dry, host));
}

TEST_CASE("bad input on standard input: the messages a file gets, and nothing written") {
  auto host = sample_host();
  host.files["/o.onnx"] = "old";
  std::string sample = host.stdin_bytes;
  auto refused = [&](std::string bytes) {
    host.stdin_bytes = std::move(bytes);
    auto result = convert_file(job("-", "/o.onnx"), host);
    REQUIRE_FALSE(result);
    CHECK(host.files.size() == 2);  // no output, no temporary
    CHECK(host.files.at("/o.onnx") == "old");
    return result.error();
  };
  auto empty = refused("");
  CHECK(empty.message == "standard input is empty; expected an ONNX model (.onnx)");
  CHECK(empty.kind == ErrorKind::kModel);
  auto junk = refused("junk");
  CHECK(junk.message == "standard input: not an ONNX model: it is text, beginning “junk”");
  CHECK(junk.kind == ErrorKind::kModel);
  auto bytes = refused(std::string("\x0a\xff\x01", 3));
  CHECK(bytes.message == "standard input: not an ONNX model: the 3 bytes do not decode as an ONNX ModelProto "
                         "(truncated or corrupted file?)");
  auto truncated = refused(sample.substr(0, sample.size() / 2));
  CHECK_THAT(truncated.message, Contains("standard input: "));
  CHECK(truncated.kind == ErrorKind::kModel);
}

TEST_CASE("standard input that cannot be read is an I/O error naming it; a terminal is not read") {
  auto host = sample_host();
  host.stdin_errno = "EISDIR";
  auto unreadable = open_input(host, "-");
  REQUIRE_FALSE(unreadable);
  CHECK(unreadable.error().message == "cannot read standard input: Is a directory");
  CHECK(unreadable.error().kind == ErrorKind::kIO);
  CHECK(unreadable.error().path == "-");
  CHECK(unreadable.error().errno_name == "EISDIR");

  auto terminal = sample_host();
  terminal.stdin_is_terminal = true;
  auto refused = open_input(terminal, "-");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().kind == ErrorKind::kOptions);
  CHECK_THAT(refused.error().message, Contains("standard input, which is a terminal"));
  CHECK(terminal.stdin_asked == 0);
}

TEST_CASE("a model read from standard input finds its data files in the current folder") {
  test::MemoryHost host;
  host.specials["/"] = FileStat::Kind::kDirectory;
  host.files["/w.bin"] = "0123456789";
  host.stdin_bytes = "model";
  auto model = open_input(host, "-");
  REQUIRE(model);
  CHECK(model->name == "standard input");
  FolderData data(host, *model);
  auto size = data.size("w.bin");
  REQUIRE(size);
  CHECK(*size == 10);
  auto missing = data.size("gone.bin");
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Contains("in the current folder (where a model read from standard input finds its data files)"));
  // The model's own bytes are held, read and viewed in memory, and written as bytes.
  auto part = data.read(kInputLocation, 1, 3);
  REQUIRE(part);
  CHECK(*part == "ode");
  CHECK(data.view(kInputLocation, 1, 3) == std::optional<std::string_view>("ode"));
  CHECK(data.held(kInputLocation) == std::optional<std::string_view>("model"));
  CHECK_FALSE(data.held("w.bin"));

  // A file's bytes are not held: its ranges are copied from the file.
  host.files["/m.onnx"] = "model";
  auto file = open_input(host, "/m.onnx");
  REQUIRE(file);
  FolderData file_data(host, *file);
  CHECK_FALSE(file_data.held(kInputLocation));
}

TEST_CASE("the command line: - is one model, read by convert and inspect, never by the check") {
  auto run = [](std::vector<std::string> args) {
    auto host = sample_host();
    int status = run_cli(args, host);
    return std::tuple{status, host};
  };
  SECTION("converted, and named in the summary") {
    auto [status, host] = run({"convert", "-", "-o", "/o.onnx"});
    CHECK(status == kExitOk);
    CHECK(host.files.contains("/o.onnx"));
    CHECK_THAT(host.out_text, Contains("input   standard input ("));
  }
  SECTION("still standard input after --") {
    auto [status, host] = run({"convert", "-o", "/o.onnx", "--", "-"});
    CHECK(status == kExitOk);
    CHECK(host.stdin_asked > 0);
  }
  SECTION("inspected") {
    auto [status, host] = run({"inspect", "-"});
    CHECK(status == kExitOk);
    CHECK_THAT(host.out_text, Contains("input   standard input ("));
  }
  SECTION("without -o: a usage error, as JSON with --json") {
    auto [status, host] = run({"convert", "-", "--json"});
    CHECK(status == kExitUsage);
    CHECK_THAT(host.out_text, Contains("\"code\": \"ERR_ONNX_LATTICE_OPTIONS\""));
  }
  for (const auto& args : std::vector<std::vector<std::string>>{{"convert", "-", "/m.onnx"}, {"convert", "/m.onnx", "-"},
                                                                {"convert", "-", "-d", "/"}}) {
    DYNAMIC_SECTION("in a batch: a usage error, nothing read: " << args[1] << " " << args[2]) {
      auto [status, host] = run(args);
      CHECK(status == kExitUsage);
      CHECK_THAT(host.err_text, Contains("- (standard input) is one model"));
      CHECK(host.stdin_asked == 0);
    }
  }
  SECTION("check and convert --check load the original by path") {
    auto [check, check_host] = run({"check", "-", "/m.onnx"});
    CHECK(check == kExitUsage);
    CHECK_THAT(check_host.err_text, Contains("'-' (standard input) is not one"));
    auto [convert, convert_host] = run({"convert", "-", "-o", "/o.onnx", "--check"});
    CHECK(convert == kExitUsage);
    CHECK_THAT(convert_host.err_text, Contains("--check runs the input model too"));
  }
}
