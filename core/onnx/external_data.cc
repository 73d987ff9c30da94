#include "core/onnx/external_data.h"

#include <charconv>
#include <unordered_set>

#include "core/onnx/model_io.h"
#include "core/onnx/tensor_data.h"
#include "core/onnx/tensor_type.h"

namespace lattice {

using onnx::TensorProto;

bool is_external(const TensorProto& t) {
  return t.data_location() == TensorProto::EXTERNAL || t.external_data_size() > 0;
}

namespace {

std::string key_value(const TensorProto& t, std::string_view key) {
  for (const auto& entry : t.external_data()) {
    if (entry.key() == key) return entry.value();
  }
  return "";
}

bool has_key(const TensorProto& t, std::string_view key) {
  for (const auto& entry : t.external_data()) {
    if (entry.key() == key) return true;
  }
  return false;
}

void set_key(TensorProto& t, std::string_view key, const std::string& value) {
  for (auto& entry : *t.mutable_external_data()) {
    if (entry.key() == key) {
      entry.set_value(value);
      return;
    }
  }
  auto* entry = t.add_external_data();
  entry->set_key(std::string(key));
  entry->set_value(value);
}

Result<uint64_t> parse_integer(const TensorProto& t, std::string_view key, std::string_view what) {
  std::string text = key_value(t, key);
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return error("{} has external data {} '{}', which is not a non-negative integer", what, key, text);
  }
  return v;
}

}  // namespace

ExternalRef stored_ref(const TensorProto& t) {
  auto number = [&](std::string_view key) {
    std::string text = key_value(t, key);
    uint64_t v = 0;
    std::from_chars(text.data(), text.data() + text.size(), v);
    return v;
  };
  return {key_value(t, "location"), number("offset"), number("length")};
}

void refer_to(TensorProto& t, const ExternalRef& ref) {
  std::string().swap(*t.mutable_raw_data());  // protobuf's clear keeps the allocation
  t.clear_raw_data();
  t.clear_external_data();
  t.set_data_location(TensorProto::EXTERNAL);
  set_key(t, "location", ref.location);
  set_key(t, "offset", std::to_string(ref.offset));
  set_key(t, "length", std::to_string(ref.length));
}

Result<TensorWithData> TensorWithData::of(const TensorProto& t, std::string_view what, ExternalData* data) {
  TensorWithData out;
  out.tensor_ = &t;
  if (!is_external(t) || t.has_raw_data()) return out;
  ExternalRef ref = stored_ref(t);
  if (!data) return error("{} keeps its data in '{}', which was not given", what, ref.location);
  auto bytes = data->read(ref.location, ref.offset, ref.length);
  if (!bytes) return error("{}: cannot read its data: {}", what, bytes.error().message);
  out.copy_ = t;
  out.copy_->set_raw_data(std::move(bytes).value());
  return out;
}

ExternalData& or_no_files(ExternalData* data) {
  static NoFiles none;  // stateless
  return data ? *data : none;
}

Result<TensorProto> produced_tensor(const std::string& name, const TensorProto& like,
                                   std::shared_ptr<const Deferred> data, ExternalData* source) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(like.data_type());
  *t.mutable_dims() = like.dims();
  if (auto ref = source ? source->defer(data) : std::nullopt) {
    refer_to(t, *ref);
    return t;
  }
  auto bytes = materialise(*data, or_no_files(source));
  if (!bytes) return error("cannot compute '{}': {}", name, bytes.error().message);
  t.set_raw_data(std::move(bytes).value());
  return t;
}

namespace {

void visit_graph(onnx::GraphProto& graph,
                 const std::function<void(TensorProto&, const TensorPlace&)>& fn) {
  for (auto& init : *graph.mutable_initializer()) fn(init, {fmt::format("initializer '{}'", init.name()), false});
  for (auto& sparse : *graph.mutable_sparse_initializer()) {
    std::string what = fmt::format("sparse initializer '{}'", sparse.values().name());
    fn(*sparse.mutable_values(), {what, true});
    fn(*sparse.mutable_indices(), {what + " indices", true});
  }
  for (auto& node : *graph.mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      TensorPlace place{fmt::format("attribute '{}' of node '{}' ({})", attr.name(), node.name(), node.op_type()), false};
      if (attr.has_t()) fn(*attr.mutable_t(), place);
      for (auto& t : *attr.mutable_tensors()) fn(t, place);
      if (attr.has_g()) visit_graph(*attr.mutable_g(), fn);
      for (auto& g : *attr.mutable_graphs()) visit_graph(g, fn);
    }
  }
}

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

}  // namespace

Status check_location(const std::string& location, std::string_view what) {
  auto refuse = [&](std::string_view why) {
    return error("{} has external data location '{}', which is {}; data files must be inside the model's folder", what,
                 location, why);
  };
  if (location.empty()) return error("{} is stored externally but names no location", what);
  if (location.find('\0') != std::string::npos) return refuse("not a file name (it holds a NUL byte)");
  if (location.front() == '/' || location.front() == '\\') return refuse("an absolute path");
  if (location.size() > 1 && location[1] == ':') return refuse("an absolute path");
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find_first_of("/\\", start);
    if (end == std::string::npos) end = location.size();
    if (location.compare(start, end - start, "..") == 0 && end - start == 2) return refuse("a way out of it ('..')");
    start = end + 1;
  }
  return ok_status();
}

Result<ExternalRef> external_ref(const TensorProto& t, std::string_view what, ExternalData& data) {
  ExternalRef ref;
  ref.location = key_value(t, "location");
  if (ref.location != kInputLocation) {
    if (auto s = check_location(ref.location, what); !s) return s.error();
  }
  // What check_tensor_data refuses in raw_data without reading it, refused here too: a skeleton's
  // reference to the model file stands for raw_data, and onnx's checker refuses strings stored
  // in external files. (The split leaves large raw_data out whatever the type: a fuzz finding.)
  if (auto s = check_not_segmented(t, what); !s) return s.error();
  auto not_string = check_not_string(t, what, ref.location == kInputLocation
                                                  ? std::string("raw_data")
                                                  : fmt::format("the external file '{}'", ref.location));
  if (!not_string) return not_string.error();
  if (has_key(t, "offset")) {
    auto offset = parse_integer(t, "offset", what);
    if (!offset) return offset.error();
    ref.offset = *offset;
  }
  std::optional<uint64_t> length;
  if (has_key(t, "length")) {
    auto l = parse_integer(t, "length", what);
    if (!l) return l.error();
    length = *l;
  }
  auto size = data.size(ref.location);
  if (!size) return error("{} keeps its data in '{}': {}", what, ref.location, size.error().message);
  if (ref.offset > *size || (length && *length > *size - ref.offset)) {
    return error("{} keeps its data at offset {} length {} of '{}', beyond the end of that file ({} bytes)", what,
                 ref.offset, length ? *length : 0, ref.location, *size);
  }
  ref.length = length ? *length : *size - ref.offset;
  auto needed = raw_bytes_needed(t, what);
  if (!needed) return needed.error();
  if (*needed && ref.length != **needed) {
    return error("{} keeps {} bytes in '{}', but dims {} of type {} need {} bytes", what, ref.length, ref.location,
                 format_dims(t), onnx_types::element_name(t.data_type()), **needed);
  }
  return ref;
}

void for_each_tensor(onnx::ModelProto& model, const std::function<void(TensorProto&, const TensorPlace&)>& fn) {
  visit_graph(*model.mutable_graph(), fn);
}

Status load_needed_values(onnx::ModelProto& model, ExternalData& data, uint64_t read_always) {
  Status status = ok_status();
  for_each_tensor(model, [&](TensorProto& t, const TensorPlace& place) {
    if (!status || !is_external(t)) return;
    const std::string& what = place.what;
    auto ref = external_ref(t, what, data);
    if (!ref) {
      status = ref.error();
      return;
    }
    set_key(t, "offset", std::to_string(ref->offset));
    set_key(t, "length", std::to_string(ref->length));
    if (ref->length > read_always) return;
    auto bytes = data.read(ref->location, ref->offset, ref->length);
    if (!bytes) {
      status = error("{}: cannot read '{}': {}", what, ref->location, bytes.error().message);
      return;
    }
    t.set_raw_data(std::move(bytes).value());
  });
  return status;
}

std::vector<DataSegment> lay_out_external(onnx::ModelProto& model, const std::string& data_file,
                                          uint64_t move_threshold) {
  std::vector<DataSegment> segments;
  uint64_t end = 0;
  auto place = [&](TensorProto& t, DataSegment segment) {
    uint64_t offset = (end + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
    if (offset > end) segments.push_back({std::string(static_cast<size_t>(offset - end), '\0'), "", 0, 0, nullptr});
    uint64_t length = segment.size();
    segments.push_back(std::move(segment));
    end = offset + length;
    t.set_data_location(TensorProto::EXTERNAL);
    set_key(t, "location", data_file);
    set_key(t, "offset", std::to_string(offset));
    set_key(t, "length", std::to_string(length));
  };
  for_each_tensor(model, [&](TensorProto& t, const TensorPlace& where) {
    if (is_external(t)) {
      // Unchanged since it was read: written as a range of its source, never through protobuf.
      ExternalRef ref = stored_ref(t);
      t.clear_raw_data();
      place(t, {"", ref.location, ref.offset, ref.length, nullptr});
    } else if (move_threshold > 0 && !where.sparse && t.has_raw_data() && t.raw_data().size() >= move_threshold) {
      DataSegment segment{std::move(*t.mutable_raw_data()), "", 0, 0, nullptr};
      t.clear_raw_data();
      place(t, std::move(segment));
    }
  });
  return segments;
}

Status inline_external(onnx::ModelProto& model, ExternalData& data) {
  uint64_t total = model.ByteSizeLong();
  for_each_tensor(model, [&](TensorProto& t, const TensorPlace&) {
    if (is_external(t) && !t.has_raw_data()) total += stored_ref(t).length;
  });
  if (total > kMaxModelBytes) {
    return error("with its data inline the model would be {}, over protobuf's 2 GiB limit of a single-file ONNX model; "
                 "write its data to a separate file instead",
                 mib(total));
  }
  // Top-level initializers are spliced in from their files as the model is written, like what the
  // skeleton left in the model file; the splice reaches no deeper, so the rest are read.
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    if (!is_external(t) || t.has_raw_data()) continue;
    ExternalRef ref = stored_ref(t);
    if (is_reserved_location(ref.location)) continue;
    refer_to(t, {std::string(kInlinedPrefix) + ref.location, ref.offset, ref.length});
  }
  return read_back(model, data, [](const ExternalRef& ref) { return !is_reserved_location(ref.location); });
}

Status read_back(onnx::ModelProto& model, ExternalData& data, const std::function<bool(const ExternalRef&)>& pick) {
  Status status = ok_status();
  for_each_tensor(model, [&](TensorProto& t, const TensorPlace& place) {
    if (!status || !is_external(t)) return;
    ExternalRef ref = stored_ref(t);
    if (!pick(ref)) return;
    if (!t.has_raw_data()) {
      auto bytes = data.read(ref.location, ref.offset, ref.length);
      if (!bytes) {
        status = error("{}: cannot read '{}': {}", place.what, ref.location, bytes.error().message);
        return;
      }
      t.set_raw_data(std::move(bytes).value());
    }
    t.clear_external_data();
    t.clear_data_location();
  });
  return status;
}

uint64_t size_of(const std::vector<DataSegment>& segments) {
  uint64_t total = 0;
  for (const auto& s : segments) total += s.size();
  return total;
}

Result<std::string> assemble(const std::vector<DataSegment>& segments, ExternalData& data) {
  std::string out;
  out.reserve(static_cast<size_t>(size_of(segments)));
  for (const auto& s : segments) {
    if (s.deferred) {
      auto written = s.deferred->write(data, [&](std::string_view bytes) {
        out += bytes;
        return ok_status();
      });
      if (!written) return cannot_compute(written.error());
      continue;
    }
    if (s.location.empty()) {
      out += s.bytes;
      continue;
    }
    auto bytes = data.read(s.location, s.offset, s.length);
    if (!bytes) return error("cannot read '{}': {}", s.location, bytes.error().message);
    out += *bytes;
  }
  return out;
}

}  // namespace lattice
