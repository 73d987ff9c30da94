#pragma once
// The one entry point: model bytes + options in, converted bytes + report out. The native CLI,
// the wasm module and the tests are thin shells over these two functions.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/onnx/external_data.h"
#include "core/onnx/skeleton.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/report/report.h"
#include "core/util/result.h"

namespace lattice {

struct ConvertResult {
  Report report;
  // The converted model file as segments: bytes the conversion made, ranges of the input
  // (location kInputLocation) for the tensor data it left where it was, and data it produced,
  // computed from the input as it is written (DataSegment::deferred). nullopt when the output is
  // the input itself (nothing applied, the layout kept).
  std::optional<std::vector<DataSegment>> converted;
  // The output's data file (named `data_file` in `convert`), when the output keeps its data
  // outside the model: new bytes, ranges of the input and of its data files.
  std::optional<std::vector<DataSegment>> data;
  // The input and the converted model for a viewer (core/describe.h), when the call's describe
  // asks for them: a host holding only parts of the input in memory cannot describe it itself.
  std::optional<Json> input_description, description;

  // The model file's bytes for a caller holding the input in memory (and reading its data files
  // through `data_files`, for the folds computed from them): the converted model put together, or
  // the input itself; nullopt for a dry run.
  std::optional<std::string> output(std::string_view input, ExternalData* data_files = nullptr) const;
};

// Which tensors stay in their files until a pattern reads them; the defaults are the product's,
// smaller ones let the tests send small models down the same paths.
struct DataLimits {
  uint64_t keep_in_file = kSkeletonThreshold;  // raw_data this large stays in the input file
  uint64_t read_always = kReadAlways;          // external data this small is read up front
};

// How one conversion is called, beside what it does (Options): none of this changes the output,
// so none of it is in the report's options.
struct ConvertCall {
  // Hears of each stage as it starts: parse, validate, the conversion and fusion passes, audit,
  // save, then "done" with fraction 1 (only on success).
  ProgressFn progress;
  // Reads the input's external data files (none: such a model is refused).
  ExternalData* data_files = nullptr;
  // The name the output's data file will have beside it (the `location` written into the model).
  std::string data_file;
  DataLimits limits;
  // An id in skip_matches that matches nothing is an error (a typo would apply the match the user
  // meant to skip) unless this is set: the page keeps a user's skips across target switches, where
  // some ids no longer exist, and shows those as "no longer matched".
  bool ignore_unknown_skips = false;
  // Also describe the input and the converted model for a viewer (ConvertResult::description),
  // from the models in memory and the report's labels: the page's graph view.
  bool describe = false;
  // Hears the input model's description (its pinned shapes in place) after it is read and before
  // it is converted; an error it returns stops the conversion (the CLI's check refuses what it
  // could not run before anything is written).
  std::function<Status(const Json& input_description)> before_conversion;

  // A call reading the input's data files from `data_files` and naming the output's `data_file`
  // (the shells' and the tests' usual call).
  static ConvertCall with_files(ExternalData* data_files, std::string data_file = "", DataLimits limits = {}) {
    ConvertCall call;
    call.data_files = data_files;
    call.data_file = std::move(data_file);
    call.limits = limits;
    return call;
  }
};

// A conversion in two steps, for a shell that names the output after what the analysis found (the
// page names its download, and so the data file written into the model, after the matches its
// skips left out: output_name): `analyse` decides everything and reports it, `write` lays the
// output out under the data file's name. `convert` is the two in one. The input and the call's
// data files must outlive the Conversion.
class Conversion {
 public:
  struct State;
  explicit Conversion(std::unique_ptr<State> state);  // analyse makes them
  Conversion(Conversion&&) noexcept;
  Conversion& operator=(Conversion&&) noexcept;
  ~Conversion();

  // The report so far: everything but the output's size and the write's timing.
  const Report& report() const;
  // The ids in the options' skip_matches that matched something: what output_name counts.
  std::vector<std::string> skipped_ids() const;
  // The output, its data file (if it has one) named `data_file`; ConvertCall::data_file's rules.
  Result<ConvertResult> write(const std::string& data_file) &&;

 private:
  Result<ConvertResult> write_model(const std::string& data_file);
  std::unique_ptr<State> state_;
};

Result<Conversion> analyse(ExternalData& input, uint64_t size, const Options& options, const ConvertCall& call = {});

// `input` reads the model file (location kInputLocation) of `size` bytes, only the parts it needs:
// everything but the large raw_data of initializers, and of those only what a pattern reads.
Result<ConvertResult> convert(ExternalData& input, uint64_t size, const Options& options, const ConvertCall& call = {});

// The same for a model held in memory.
Result<ConvertResult> convert(std::span<const uint8_t> bytes, const Options& options, const ConvertCall& call = {});

// The plan and the audit without converting: `convert` with dry_run set.
Result<Report> inspect(std::span<const uint8_t> bytes, const Options& options, ExternalData* data = nullptr);

}  // namespace lattice
