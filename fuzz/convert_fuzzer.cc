// libFuzzer target over the whole conversion (scripts/fuzz.sh builds and runs it). Each input is
// converted with every option set below, and described; crashes, sanitizer reports and hangs are
// findings, an Error result is not. Invariants that must hold on any input end the run with a
// trap, after one line on stderr saying which.
//
// Input: a model file, optionally followed by a data file and a trailer of 12 bytes, "LATDATA:"
// and the data file's length (u32, little-endian). Without the trailer the data file is the
// input's last bytes (at most 1 KiB). Every location the model names reads that one data file.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/convert.h"
#include "core/describe.h"
#include "core/onnx/external_data.h"
#include "core/onnx/model_io.h"
#include "core/onnx/skeleton.h"
#include "core/onnx/validate.h"

namespace {

using lattice::DataLayout;
using lattice::Error;
using lattice::ExternalData;
using lattice::Options;
using lattice::Result;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "convert_fuzzer: invariant failed: %s\n", what);
  std::fflush(stderr);
  __builtin_trap();
}

void check(bool condition, const char* what) {
  if (!condition) fail(what);
}

const std::string kDataFile = "fuzz.onnx.data";

// One data file in memory. `any_location`: every location reads it (the input's data), or only
// `name` does (the output's data file). A read outside the file is a finding: the core reads only
// after checking every reference against the file's size.
class MemoryData : public ExternalData {
 public:
  MemoryData(std::string bytes, std::string name, bool any_location)
      : bytes_(std::move(bytes)), name_(std::move(name)), any_location_(any_location) {}
  Result<uint64_t> size(const std::string& location) override {
    if (!any_location_ && location != name_) return Error{"no such data file: " + location};
    return uint64_t{bytes_.size()};
  }
  Result<std::string> read(const std::string& location, uint64_t offset, uint64_t length) override {
    if (!any_location_ && location != name_) return Error{"no such data file: " + location};
    check(offset <= bytes_.size() && length <= bytes_.size() - offset, "read outside a checked data file");
    return bytes_.substr(offset, length);
  }

 private:
  std::string bytes_, name_;
  bool any_location_;
};

struct Split {
  std::span<const uint8_t> model;
  std::string data;
};

Split split(const uint8_t* bytes, size_t size) {
  constexpr std::string_view kMagic = "LATDATA:";
  constexpr size_t kTrailer = 12, kTailData = 1024;
  if (size >= kTrailer && std::memcmp(bytes + size - kTrailer, kMagic.data(), kMagic.size()) == 0) {
    const uint8_t* n = bytes + size - 4;
    uint64_t length = n[0] | n[1] << 8 | n[2] << 16 | uint64_t{n[3]} << 24;
    if (length <= size - kTrailer) {
      size_t model_size = size - kTrailer - length;
      return {{bytes, model_size}, std::string(reinterpret_cast<const char*>(bytes) + model_size, length)};
    }
  }
  size_t tail = size < kTailData ? size : kTailData;
  return {{bytes, size}, std::string(reinterpret_cast<const char*>(bytes) + size - tail, tail)};
}

std::span<const uint8_t> as_bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

bool has_external(const onnx::ModelProto& model) {
  bool found = false;
  onnx::ModelProto copy = model;
  lattice::for_each_tensor(copy, [&](onnx::TensorProto& t, const lattice::TensorPlace&) {
    found = found || lattice::is_external(t);
  });
  return found;
}

// Progress fractions stay in [0, 1] and never go back.
struct ProgressCheck {
  double last = 0;
  lattice::ProgressFn fn() {
    return [this](std::string_view, double f) {
      check(f >= 0 && f <= 1 && f >= last, "progress fraction out of range or going back");
      last = f;
    };
  }
};

Options with_layout(Options o, DataLayout layout) {
  o.layout = layout;
  return o;
}

// A successful conversion's output: parses and validates, with its data file when it has one,
// and converts again (target none, no folding) unchanged when its data is inline.
void check_output(const lattice::ConvertResult& result, std::span<const uint8_t> input, ExternalData& input_data) {
  auto out = result.output({reinterpret_cast<const char*>(input.data()), input.size()}, &input_data);
  check(out.has_value(), "no output without a dry run");
  auto parsed = lattice::parse_model(as_bytes(*out));
  check(parsed.ok(), "the output does not parse");

  MemoryData* out_data = nullptr;
  std::string assembled;
  if (result.data) {
    lattice::SpanData model(input);
    lattice::ModelSource files(model, &input_data);
    auto file = lattice::assemble(*result.data, files);
    check(file.ok(), "the output's data file cannot be assembled");
    assembled = std::move(file).value();
  }
  MemoryData written(assembled, kDataFile, false);
  if (result.data) out_data = &written;
  ExternalData* data = result.converted ? static_cast<ExternalData*>(out_data) : &input_data;
  check(lattice::validate_model(*parsed, data).ok(), "the output does not validate");

  Options again;
  again.target = "none";
  again.fold_batch_norm = false;
  auto second = lattice::convert(as_bytes(*out), again, lattice::ConvertCall::with_files(data, kDataFile));
  check(second.ok(), "the output cannot be converted again");
  if (!has_external(*parsed)) check(!second->converted, "converting the output again with target none changed it");
}

void run(const Options& options, std::span<const uint8_t> model, ExternalData* data, bool describe) {
  ProgressCheck progress;
  auto call = lattice::ConvertCall::with_files(data, kDataFile);
  call.progress = progress.fn();
  call.describe = describe;
  auto result = lattice::convert(model, options, call);
  if (!result) return;
  check(progress.last == 1, "a successful conversion did not report done");
  (void)result->report.to_json().dump();
  if (result->description) (void)result->description->dump();
  if (options.dry_run) {
    check(!result->converted && !result->data, "a dry run produced output");
    return;
  }
  MemoryData none("", "", false);
  check_output(*result, model, data ? *data : none);
}

// The wire-level reader: the input split with every raw_data payload left in place, then spliced
// back, is what protobuf writes for the input parsed whole; the split refuses exactly what
// protobuf refuses. And a conversion reading tensor data on demand (every payload of 16 bytes or
// more left in the input; external tensors up to kReadAlways read up front, as always, for the
// shapes) and computing what it produces as it is written, writes the same bytes as one that
// read them all.
void check_skeleton(std::span<const uint8_t> model, ExternalData& data, const Options& options,
                    const Result<lattice::ConvertResult>& whole) {
  lattice::SpanData input(model);
  auto parsed = lattice::parse_model(model);
  auto skeleton = lattice::split_skeleton(input, model.size(), 1);
  // The split only walks the fields on the way to the initializers; protobuf's parse of the
  // skeleton checks the rest, so the two together accept exactly what protobuf accepts.
  bool reserved = !skeleton && skeleton.error().message.find("reserves for itself") != std::string::npos;
  auto again = skeleton ? lattice::parse_model(as_bytes(skeleton->bytes)) : Result<onnx::ModelProto>(skeleton.error());
  check(parsed.ok() == (again.ok() || reserved), "the skeleton reader and protobuf disagree on whether the input parses");
  if (again && parsed) {
    auto segments = lattice::splice_skeleton(again->SerializeAsString());
    if (segments) {
      auto spliced = lattice::assemble(*segments, input);
      check(spliced && *spliced == parsed->SerializeAsString(), "split and spliced differs from protobuf's bytes");
    }
  }

  auto on_demand = lattice::convert(input, model.size(), options, lattice::ConvertCall::with_files(&data, kDataFile, {16, lattice::kReadAlways}));
  check(on_demand.ok() == whole.ok(), "reading on demand changed whether the model converts");
  if (!whole.ok()) return;
  std::string_view in(reinterpret_cast<const char*>(model.data()), model.size());
  // Its folds are computed as the output is written (every produced tensor of 16 bytes or more):
  // the same bytes as the whole conversion holds.
  check(on_demand->output(in, &data) == whole->output(in, &data), "reading on demand changed the output");
  check(on_demand->report.matches.size() == whole->report.matches.size(), "reading on demand changed the matches");
  check(on_demand->data.has_value() == whole->data.has_value(), "reading on demand changed the files written");
  if (on_demand->data) {
    lattice::ModelSource files(input, &data);
    auto written = lattice::assemble(*on_demand->data, files), expected = lattice::assemble(*whole->data, files);
    check(written.ok() && expected.ok() && *written == *expected, "reading on demand changed the data file");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  Split input = split(bytes, size);
  MemoryData data(input.data, "", true);

  if (auto description = lattice::describe_model(input.model)) (void)description->dump(false);

  // Default target with folding, its dry run reporting what the real run writes.
  Options lattice_fold;
  auto real = lattice::convert(input.model, lattice_fold, lattice::ConvertCall::with_files(&data, kDataFile));
  Options dry = lattice_fold;
  dry.dry_run = true;
  auto planned = lattice::convert(input.model, dry, lattice::ConvertCall::with_files(&data, kDataFile));
  check(real.ok() == planned.ok(), "a dry run and the real run disagree on success");
  if (real.ok()) {
    check(real->report.matches.size() == planned->report.matches.size(), "a dry run planned other matches");
    check(real->report.any_applied() == planned->report.any_applied(), "a dry run applied otherwise");
  }
  check_skeleton(input.model, data, lattice_fold, real);
  run(lattice_fold, input.model, &data, true);

  Options none_fold;
  none_fold.target = "none";
  run(none_fold, input.model, &data, false);

  // Nothing to do: a model that converts comes back byte for byte.
  Options identity;
  identity.target = "none";
  identity.fold_batch_norm = false;
  auto same = lattice::convert(input.model, identity, lattice::ConvertCall::with_files(nullptr, kDataFile));
  if (same) {
    check(!same->converted && !same->data, "target none without folding rewrote the model");
    auto out = same->output({reinterpret_cast<const char*>(input.model.data()), input.model.size()});
    check(out && std::string_view(*out) == std::string_view(reinterpret_cast<const char*>(input.model.data()), input.model.size()),
          "target none without folding did not return the input");
  }

  Options advanced;
  advanced.target = "lattice-advanced";
  run(with_layout(advanced, DataLayout::kExternal), input.model, &data, false);
  Options no_fold;
  no_fold.fold_batch_norm = false;
  no_fold.snap_weights = lattice::SnapWeights::kTransfer;  // reads the weights of every snapped kernel
  run(with_layout(no_fold, DataLayout::kInline), input.model, &data, true);
  // The first graph input pinned to one size, as `--input-shape` does.
  if (auto parsed = lattice::parse_model(input.model); parsed && parsed->graph().input_size() > 0) {
    Options pinned;
    pinned.input_shapes.push_back({parsed->graph().input(0).name(), {1, 3, 16, 16}});
    run(pinned, input.model, &data, false);
  }
  return 0;
}
