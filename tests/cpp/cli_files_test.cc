// core/cli/files.cc and data_files.cc over a file system in memory: which paths may be written,
// how symlinks are followed, the all-or-nothing writing of a command's outputs, and which data
// files a model may read. (The node CLI tests cover the same on a real file system.)
#include <catch2/catch.hpp>

#include "core/cli/data_files.h"
#include "core/cli/files.h"
#include "memory_host.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

Destination destination_of(test::MemoryHost& host, const std::string& flag, const std::string& path) {
  auto d = destination(host, flag, path);
  REQUIRE(d);
  return *d;
}

// Files that are neither an output nor one of its temporaries: what a run must not touch.
size_t temporaries_left(const test::MemoryHost& host) {
  size_t n = 0;
  for (const auto& [path, bytes] : host.files) n += path.find(".tmp") != std::string::npos ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("outputs are written together: a failure at the second file leaves no new file and the old ones as they were") {
  test::MemoryHost host;
  host.files["/out/model.onnx"] = "old model";
  auto model = destination_of(host, "-o", "/out/model.onnx");
  auto data = destination_of(host, "-o", "/out/model.onnx.data");
  auto report = destination_of(host, "--report", "/out/report.json");
  std::vector<Output> outputs{{&model, "new model"}, {&data, "new data"}, {&report, "{}"}};

  SECTION("the second temporary file cannot be written") {
    host.fail_temporary_at = 2;
    auto s = write_together(host, outputs);
    REQUIRE_FALSE(s);
    CHECK(s.error().message == "cannot write '/out/model.onnx.data': No space left on device");
    CHECK(host.renames == 0);
    CHECK(host.files == std::map<std::string, std::string>{{"/out/model.onnx", "old model"}});
  }
  SECTION("the last temporary file cannot be written") {
    host.fail_temporary_at = 3;
    REQUIRE_FALSE(write_together(host, outputs));
    CHECK(host.renames == 0);
    CHECK(host.files == std::map<std::string, std::string>{{"/out/model.onnx", "old model"}});
  }
  SECTION("the second rename fails: its temporary file and those after it go, none is left behind") {
    host.fail_rename_at = 2;
    auto s = write_together(host, outputs);
    REQUIRE_FALSE(s);
    CHECK(s.error().message == "cannot write '/out/model.onnx.data': Input/output error");
    CHECK(temporaries_left(host) == 0);
    CHECK_FALSE(host.files.contains("/out/model.onnx.data"));
    CHECK_FALSE(host.files.contains("/out/report.json"));
  }
  SECTION("nothing fails: every output in place, no temporary file left") {
    REQUIRE(write_together(host, outputs));
    CHECK(host.files == std::map<std::string, std::string>{
                            {"/out/model.onnx", "new model"}, {"/out/model.onnx.data", "new data"}, {"/out/report.json", "{}"}});
  }
}

TEST_CASE("staged outputs leave the files there as they were until they are placed together") {
  test::MemoryHost host;
  host.files["/out/model.onnx"] = "old model";
  host.files["/out/report.json"] = "old report";
  auto model = destination_of(host, "-o", "/out/model.onnx");
  auto data = destination_of(host, "-o", "/out/model.onnx.data");
  auto report = destination_of(host, "--report", "/out/report.json");
  auto staged = stage_together(host, {{&model, "new model"}, {&data, "new data"}, {&report, "{}"}});
  REQUIRE(staged);
  REQUIRE(staged->size() == 3);
  CHECK(host.renames == 0);
  CHECK(host.files.at("/out/model.onnx") == "old model");
  CHECK(host.files.at((*staged)[0].temporary) == "new model");
  CHECK((*staged)[1].resolved == "/out/model.onnx.data");
  CHECK((*staged)[2].path == "/out/report.json");

  SECTION("placed: every output in place, in order, no temporary file left") {
    REQUIRE(place_together(host, std::move(staged).value()));
    CHECK(host.files == std::map<std::string, std::string>{
                            {"/out/model.onnx", "new model"}, {"/out/model.onnx.data", "new data"}, {"/out/report.json", "{}"}});
  }
  SECTION("the second rename fails: the first is in place, the rest removed, the old report kept") {
    host.fail_rename_at = 2;
    auto s = place_together(host, std::move(staged).value());
    REQUIRE_FALSE(s);
    CHECK(s.error().message == "cannot write '/out/model.onnx.data': Input/output error");
    CHECK(temporaries_left(host) == 0);
    CHECK(host.files == std::map<std::string, std::string>{{"/out/model.onnx", "new model"}, {"/out/report.json", "old report"}});
  }
  SECTION("the second temporary file cannot be written: none stays") {
    host.files.erase((*staged)[0].temporary);
    host.files.erase((*staged)[1].temporary);
    host.files.erase((*staged)[2].temporary);
    host.fail_temporary_at = host.temporaries + 2;
    REQUIRE_FALSE(stage_together(host, {{&model, "new model"}, {&data, "new data"}}));
    CHECK(temporaries_left(host) == 0);
    CHECK(host.files.at("/out/model.onnx") == "old model");
  }
}

TEST_CASE("standard output and a device cannot be staged") {
  test::MemoryHost host;
  auto out = destination_of(host, "-o", "-");
  CHECK_FALSE(out.stages());
  CHECK_FALSE(stage_together(host, {{&out, "m"}}));
  CHECK(host.stdout_bytes.empty());
}

TEST_CASE("standard output is written before any file is renamed into place") {
  test::MemoryHost host;
  auto model = destination_of(host, "-o", "/out/model.onnx");
  auto report = destination_of(host, "--report", "-");
  host.fail_rename_at = 1;
  REQUIRE_FALSE(write_together(host, {{&model, "m"}, {&report, "{\"r\":1}"}}));
  CHECK(host.stdout_bytes == "{\"r\":1}");
  CHECK(host.files.empty());
}

TEST_CASE("standard output that cannot be written leaves no new file and no temporary one") {
  test::MemoryHost host;
  host.files["/out/model.onnx"] = "old model";
  auto model = destination_of(host, "-o", "/out/model.onnx");
  auto report = destination_of(host, "--report", "-");
  host.fail_stdout = true;
  auto s = write_together(host, {{&model, "m"}, {&report, "{}"}});
  REQUIRE_FALSE(s);
  CHECK_THAT(s.error().message, Contains("cannot write to standard output: Broken pipe"));
  CHECK(host.files == std::map<std::string, std::string>{{"/out/model.onnx", "old model"}});
}

TEST_CASE("an output that is a directory or a FIFO is a usage error; a device or a symlinked file is not") {
  test::MemoryHost host;
  host.specials["/out"] = FileStat::Kind::kDirectory;
  host.specials["/pipe"] = FileStat::Kind::kFifo;
  host.specials["/dev/null"] = FileStat::Kind::kCharDevice;
  host.files["/real/model.onnx"] = "old";
  host.links["/real/link.onnx"] = "model.onnx";
  for (const char* refused : {"/out", "/pipe"}) {
    CAPTURE(refused);
    auto d = destination(host, "-o", refused);
    REQUIRE_FALSE(d);
    CHECK(d.error().kind == ErrorKind::kOptions);
    CHECK_THAT(d.error().message, Contains(std::string("-o '") + refused + "' is a"));
  }
  CHECK(destination_of(host, "-o", "/dev/null").target.stat.kind == FileStat::Kind::kCharDevice);
  auto linked = destination_of(host, "-o", "/real/link.onnx");
  CHECK(linked.target.resolved == "/real/model.onnx");
  CHECK(linked.target.stat.kind == FileStat::Kind::kRegular);
}

TEST_CASE("a chain of 40 symlinks is followed, a 41st link is a loop (as Linux's MAXSYMLINKS)") {
  auto chain = [](int links) {
    test::MemoryHost host;
    for (int i = 0; i < links; ++i) host.links["/l" + std::to_string(i)] = "/l" + std::to_string(i + 1);
    host.files["/l" + std::to_string(links)] = "end";
    return host;
  };
  auto forty = chain(40);
  auto followed = resolve(forty, "/l0");
  REQUIRE(followed);
  CHECK(followed->resolved == "/l40");
  auto forty_one = chain(41);
  auto loop = resolve(forty_one, "/l0");
  REQUIRE_FALSE(loop);
  CHECK(loop.error().message == "'/l0': Too many levels of symbolic links");
}

TEST_CASE("a data file is read only inside the model's folder, as a regular file, within its size") {
  test::MemoryHost host;
  host.files["/m/model.onnx"] = "model";
  host.files["/m/w.bin"] = "0123456789";
  host.files["/mx/w.bin"] = "outside";  // a sibling folder whose name starts with the model's
  host.links["/m/sibling.bin"] = "/mx/w.bin";
  host.links["/m/inner.bin"] = "w.bin";
  host.specials["/m"] = FileStat::Kind::kDirectory;
  host.specials["/m/dir"] = FileStat::Kind::kDirectory;
  auto model = open_input(host, "/m/model.onnx");
  REQUIRE(model);
  FolderData data(host, *model);

  auto size = data.size("w.bin");
  REQUIRE(size);
  CHECK(*size == 10);
  CHECK(data.size("inner.bin"));  // a symlink that stays inside is followed
  auto outside = data.size("sibling.bin");
  REQUIRE_FALSE(outside);
  CHECK_THAT(outside.error().message, Contains("outside the model's folder '/m'"));
  auto dir = data.size("dir");
  REQUIRE_FALSE(dir);
  CHECK(dir.error().message == "not a regular file");
  CHECK_FALSE(data.size("../mx/w.bin"));

  // The last byte of the file can be read; one past it cannot.
  auto whole = data.read("w.bin", 0, 10);
  REQUIRE(whole);
  CHECK(*whole == "0123456789");
  auto last = data.read("w.bin", 9, 1);
  REQUIRE(last);
  CHECK(*last == "9");
  CHECK(data.read("w.bin", 10, 0));
  for (auto [offset, length] : {std::pair<uint64_t, uint64_t>{9, 2}, {10, 1}, {11, 0}}) {
    CAPTURE(offset, length);
    auto past = data.read("w.bin", offset, length);
    REQUIRE_FALSE(past);
    CHECK(past.error().message == "range beyond the end of the file");
  }
}
