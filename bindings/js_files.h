#pragma once
// The model's files as the JS side holds them, for the core to read (bindings/bindings.cc).
#include <emscripten/val.h>

#include <string>

#include "core/onnx/external_data.h"

namespace lattice_wasm {

using emscripten::val;

// The model (kInputLocation) and its data files, which `resolve(location)` (never throws) returns
// or gives null for, never copied into the heap whole. A file is bytes in JS memory (a Uint8Array)
// or a Blob -- the page's File, read in ranges where it lies. Only the ranges the core asks for
// are copied in.
// `held` (a Map, or undefined) gives ranges of the files that JS has read already, as the page's
// worker does ahead of the conversion (web/worker.js): file -> [{offset, bytes}]. A read that lies
// inside one is copied from it; any other read goes to the file (FileReaderSync on a slice of a
// Blob: synchronous, and far slower per byte and per call than the worker's large reads ahead).
class JsFiles final : public lattice::ExternalData {
 public:
  JsFiles(val model, val resolve, val held = val::undefined())
      : model_(std::move(model)), resolve_(std::move(resolve)), held_(std::move(held)) {}

  static bool is_bytes(const val& file) { return file.instanceof(val::global("Uint8Array")); }
  static uint64_t size_of(const val& file) {
    return static_cast<uint64_t>((is_bytes(file) ? file["length"] : file["size"]).as<double>());
  }

  lattice::Result<uint64_t> size(const std::string& location) override;
  lattice::Result<std::string> read(const std::string& location, uint64_t offset, uint64_t length) override;
  std::optional<std::string_view> view(const std::string& location, uint64_t offset, uint64_t length) override;
  bool has_files() const override { return !resolve_.isUndefined(); }
  bool model_is_blob() const { return !is_bytes(model_); }

  // The range as a part of an output file: a view of the bytes, or a slice of the Blob (which
  // reads nothing until the output is saved).
  lattice::Result<val> range(const std::string& location, uint64_t offset, uint64_t length);

  // Planning (the `plan` binding): the core's reads of tensor data -- a range it first asks to
  // view, as every Deferred reading an input range does (a fold's weights) -- are noted and
  // refused, so the fold that asked is refused at once rather than computed on bytes not read;
  // every other read (the skeleton walk, small tensors) is made and its bytes kept, so the
  // conversion after the plan need not read them again. What the conversion will read of tensor
  // data is the same ranges: each fold reads its own layer's weights, whatever came before it.
  void start_planning();
  // [{file, offset, length}]: the ranges of tensor data noted, in the order asked.
  val planned() const { return planned_; }
  // [{file, offset, bytes}]: what was read while planning.
  val kept() const { return kept_; }

 private:
  lattice::Result<val> lookup(const std::string& location);
  bool planned_inside(const std::string& location, uint64_t offset, uint64_t length) const;

  val model_;
  val resolve_;
  val held_;
  bool planning_ = false;
  val planned_ = val::undefined(), kept_ = val::undefined();
  // The range noted last: a Deferred reads the range it asked to view at once, chunk by chunk.
  std::string noted_location_;
  uint64_t noted_offset_ = 0, noted_length_ = 0;
};

}  // namespace lattice_wasm
