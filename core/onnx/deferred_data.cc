#include "core/onnx/deferred_data.h"

#include <algorithm>

#include "core/onnx/external_data.h"

namespace lattice {

Status InputRange::write(ExternalData& input, const ByteSink& sink) const {
  if (auto mapped = input.view(location_, offset_, length_)) return sink(*mapped);
  for (uint64_t done = 0; done < length_;) {
    uint64_t n = std::min(kChunk, length_ - done);
    auto bytes = input.read(location_, offset_ + done, n);
    if (!bytes) return bytes.error();
    if (auto s = sink(*bytes); !s) return s;
    done += n;
  }
  return ok_status();
}

Status write_produced(const Producer& produce, std::string& buffer, const ByteSink& write) {
  buffer.clear();
  buffer.reserve(kProducedRun);
  auto produced = produce([&](std::string_view bytes) {
    if (buffer.size() + bytes.size() > kProducedRun) {
      if (auto s = write(buffer); !s) return s;
      buffer.clear();
      if (bytes.size() >= kProducedRun) return write(bytes);  // large already: not copied
    }
    buffer += bytes;
    return ok_status();
  });
  if (!produced) return produced;
  return buffer.empty() ? ok_status() : write(buffer);
}

Error cannot_compute(const Error& why) { return error("cannot compute the converted data: {}", why.message); }

Result<std::string> materialise(const Deferred& deferred, ExternalData& input) {
  std::string out;
  out.reserve(static_cast<size_t>(deferred.length()));
  auto written = deferred.write(input, [&](std::string_view bytes) {
    out += bytes;
    return ok_status();
  });
  if (!written) return written.error();
  return out;
}

}  // namespace lattice
