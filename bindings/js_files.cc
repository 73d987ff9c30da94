#include "bindings/js_files.h"

#include <emscripten/em_js.h>
#include <emscripten/emscripten.h>

#include <utility>

#include "bindings/js_values.h"

// A Blob (a slice of a File) read synchronously (FileReaderSync, which a worker has), as {bytes}
// or {error}: a JS exception must not unwind through wasm frames built without C++ exceptions.
// When the caller set `Module.profile` (the page's worker does), the reads are counted there.
EM_JS(emscripten::EM_VAL, read_blob, (emscripten::EM_VAL blob), {
  const started = performance.now();
  try {
    const bytes = new Uint8Array(new FileReaderSync().readAsArrayBuffer(Emval.toValue(blob)));
    const p = Module.profile;
    if (p) p.reads++, p.readBytes += bytes.length, p.readMs += performance.now() - started;
    return Emval.toHandle({bytes});
  } catch (e) {
    return Emval.toHandle({error : String(e && e.message || e)});
  }
});

// The bytes [offset, offset + length) of `file` if a range `held` has for it contains them (a
// view, not a copy), else undefined. The worker keeps each file's ranges sorted by offset.
EM_JS(emscripten::EM_VAL, held_bytes, (emscripten::EM_VAL held, emscripten::EM_VAL file, double offset, double length), {
  const ranges = Emval.toValue(held).get(Emval.toValue(file));
  if (!ranges) return Emval.toHandle(undefined);
  let lo = 0, hi = ranges.length;  // the first range starting after `offset`
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ranges[mid].offset <= offset) lo = mid + 1; else hi = mid;
  }
  const r = ranges[lo - 1];
  if (!r || offset + length > r.offset + r.bytes.length) return Emval.toHandle(undefined);
  const p = Module.profile;
  if (p) p.held++, p.heldBytes += length;
  return Emval.toHandle(r.bytes.subarray(offset - r.offset, offset - r.offset + length));
});

namespace lattice_wasm {

lattice::Result<uint64_t> JsFiles::size(const std::string& location) {
  auto file = lookup(location);
  if (!file) return file.error();
  return size_of(*file);
}

lattice::Result<std::string> JsFiles::read(const std::string& location, uint64_t offset, uint64_t length) {
  if (planning_ && planned_inside(location, offset, length)) return lattice::error("tensor data is not read while planning");
  auto file = lookup(location);
  if (!file) return file.error();
  if (offset + length > size_of(*file)) return lattice::error("range beyond the end");
  auto [from, to] = std::pair(static_cast<double>(offset), static_cast<double>(offset + length));
  if (is_bytes(*file)) return copy_in(file->call<val>("subarray", from, to));
  if (!held_.isUndefined()) {
    val held = val::take_ownership(held_bytes(held_.as_handle(), file->as_handle(), from, to - from));
    if (!held.isUndefined()) return copy_in(held);
  }
  val read = val::take_ownership(read_blob(file->call<val>("slice", from, to).as_handle()));
  if (read.hasOwnProperty("error")) return lattice::error("cannot read the file: {}", read["error"].as<std::string>());
  std::string bytes = copy_in(read["bytes"]);
  if (planning_) {
    val kept = val::object();
    kept.set("file", *file);
    kept.set("offset", static_cast<double>(offset));
    kept.set("bytes", read["bytes"]);
    kept_.call<void>("push", kept);
  }
  return bytes;
}

std::optional<std::string_view> JsFiles::view(const std::string& location, uint64_t offset, uint64_t length) {
  if (!planning_ || planned_inside(location, offset, length)) return std::nullopt;
  auto file = lookup(location);
  if (!file || is_bytes(*file)) return std::nullopt;
  noted_location_ = location, noted_offset_ = offset, noted_length_ = length;
  val range = val::object();
  range.set("file", *file);
  range.set("offset", static_cast<double>(offset));
  range.set("length", static_cast<double>(length));
  planned_.call<void>("push", range);
  return std::nullopt;
}

lattice::Result<val> JsFiles::range(const std::string& location, uint64_t offset, uint64_t length) {
  auto file = lookup(location);
  if (!file) return file.error();
  if (offset + length > size_of(*file)) return lattice::error("range beyond the end");
  return file->call<val>(is_bytes(*file) ? "subarray" : "slice", static_cast<double>(offset),
                         static_cast<double>(offset + length));
}

void JsFiles::start_planning() {
  planning_ = true;
  planned_ = val::array();
  kept_ = val::array();
}

lattice::Result<val> JsFiles::lookup(const std::string& location) {
  if (location == lattice::kInputLocation) return model_;
  if (resolve_.isUndefined()) return lattice::error("no data files were given (options.resolver)");
  val file = resolve_(location);
  if (file.isNull() || file.isUndefined()) return lattice::error("no file of that name was given");
  return file;
}

bool JsFiles::planned_inside(const std::string& location, uint64_t offset, uint64_t length) const {
  return location == noted_location_ && noted_offset_ <= offset && offset + length <= noted_offset_ + noted_length_;
}

}  // namespace lattice_wasm
