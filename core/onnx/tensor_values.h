#pragma once
// Numeric values of floating-point tensors, read into double and written back in the tensor's
// own type with one rounding (float, double, float16).
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/onnx/deferred_data.h"
#include "core/onnx/external_data.h"
#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice {

bool is_float_type(int32_t data_type);  // FLOAT, DOUBLE, FLOAT16

// Whether `v` is finite and stays finite once rounded to `data_type` (float16: below 65520, which
// rounds to 65504 at most).
bool fits_type(double v, int32_t data_type);

// The values, in row-major order; an error naming `what` for other element types.
Result<std::vector<double>> read_values(const onnx::TensorProto& tensor, std::string_view what);

// Integer values (int64, int32) as int64: shapes, pads, axes.
Result<std::vector<int64_t>> read_int_values(const onnx::TensorProto& tensor, std::string_view what);

// A tensor named `name` of `data_type` (a float type) with `dims`, holding `values` rounded once
// to that type, stored as raw_data (little-endian, as ONNX requires).
onnx::TensorProto make_tensor(const std::string& name, int32_t data_type, const std::vector<int64_t>& dims,
                              const std::vector<double>& values);

// IEEE 754 binary16 <-> float, rounding to nearest even; double -> binary16 rounds once.
float half_to_float(uint16_t h);
uint16_t double_to_half(double v);

// The values of a float tensor mapped by fn(first, values) as Deferred data, computed from the
// tensor's stored data each time it is written: `values` holds elements first, first + 1, ... of
// one block, widened to double, to be replaced in place; blocks come in order, and the results
// are rounded once to the tensor's type. Plain loops over a block, not a call per value: a fold
// maps every weight of the model.
using BlockMap = std::function<void(size_t first, std::span<double> values)>;
class MappedValues final : public Deferred {
 public:
  // `tensor` (named `what` in messages) must be a float tensor whose data matches its dims; its
  // data is read now only if it is in memory (copied), else later through `data`.
  static Result<std::shared_ptr<const MappedValues>> of(const onnx::TensorProto& tensor, std::string_view what,
                                                       ExternalData* data, BlockMap fn);
  uint64_t length() const override { return source_->length(); }
  Status write(ExternalData& input, const ByteSink& sink) const override;
  // The tensor's raw bytes it is computed from.
  const std::shared_ptr<const Deferred>& source() const { return source_; }
  // The first mapped value the type cannot hold (not finite, or float16 from 65520), if any:
  // computes every value once, writing nothing.
  Result<std::optional<double>> first_unrepresentable(ExternalData& input) const;

  MappedValues(std::shared_ptr<const Deferred> source, int32_t data_type, BlockMap fn)
      : source_(std::move(source)), data_type_(data_type), fn_(std::move(fn)) {}

 private:
  friend Status scan_values(const onnx::TensorProto&, std::string_view, ExternalData*, BlockMap);
  // Maps every block; then writes it to `sink`, or looks for an unrepresentable value, or neither.
  Status run(ExternalData& input, const ByteSink* sink, std::optional<double>* unrepresentable) const;

  std::shared_ptr<const Deferred> source_;  // the tensor's raw bytes
  int32_t data_type_;
  BlockMap fn_;
};

// The largest magnitude among the stored values of a float type `data_type` in `bytes` (NaN if one
// is NaN, infinity if one is infinite; 0 for none): one pass comparing the stored bits as integers,
// where they lie, with no widening -- cheap enough to bound a fold's values before computing them.
Result<double> largest_magnitude(const Deferred& bytes, int32_t data_type, ExternalData& input);

// Gives fn the values of a float tensor block by block (as MappedValues, whose `values` it may
// read and need not change), reading them where they lie: an analysis over every weight of a
// model that never holds more than a block of it.
Status scan_values(const onnx::TensorProto& tensor, std::string_view what, ExternalData* data, BlockMap fn);

}  // namespace lattice
