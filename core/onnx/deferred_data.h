#pragma once
// Tensor data a pattern defines but does not hold: a fold's weights are computed from the layer's
// weights as the model is written, block by block straight into the output, so a conversion
// never holds the folded model in memory, and the bytes it writes were computed an instant before
// (hot in the cache, no page faults on large new buffers: holding them cost the native CLI half
// its time).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/util/result.h"

namespace lattice {

class ExternalData;

// Takes the next bytes of what is being written, in order.
using ByteSink = std::function<Status(std::string_view)>;

class Deferred {
 public:
  virtual ~Deferred() = default;
  virtual uint64_t length() const = 0;
  // Gives sink the `length()` bytes, in order, the same each time. `input` reads the files the
  // conversion read (the model file as kInputLocation, its data files).
  virtual Status write(ExternalData& input, const ByteSink& sink) const = 0;
};

// Bytes in memory as a Deferred.
class HeldBytes final : public Deferred {
 public:
  explicit HeldBytes(std::string bytes) : bytes_(std::move(bytes)) {}
  uint64_t length() const override { return bytes_.size(); }
  Status write(ExternalData&, const ByteSink& sink) const override { return sink(bytes_); }

 private:
  std::string bytes_;
};

// A range of one of the input's files as a Deferred: where it lies when the host maps it, else
// read in chunks of at most kChunk bytes (8 MiB: the page reads each with a FileReaderSync call,
// and 1 MiB chunks made ResNet-50 12 % slower there, for 5 MiB less heap).
class InputRange final : public Deferred {
 public:
  static constexpr uint64_t kChunk = 8 << 20;
  InputRange(std::string location, uint64_t offset, uint64_t length)
      : location_(std::move(location)), offset_(offset), length_(length) {}
  uint64_t length() const override { return length_; }
  Status write(ExternalData& input, const ByteSink& sink) const override;

 private:
  std::string location_;
  uint64_t offset_, length_;
};

// The error of a Deferred that failed as an output was written (its input could not be read).
Error cannot_compute(const Error& why);

// What `produce` gives, handed to `write` in runs of kProducedRun bytes (the last may be shorter,
// a large piece given whole may be longer): a Deferred gives a few KiB at a time, which would be a
// system call (or a JS object) each. `buffer` is the run's, reused between calls.
inline constexpr size_t kProducedRun = 1 << 20;
using Producer = std::function<Status(const ByteSink&)>;
Status write_produced(const Producer& produce, std::string& buffer, const ByteSink& write);

// All of a Deferred's bytes in one string: for a reader that needs them at once.
Result<std::string> materialise(const Deferred& deferred, ExternalData& input);

}  // namespace lattice
