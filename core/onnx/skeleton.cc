#include "core/onnx/skeleton.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>

#include "core/onnx/file_kind.h"
#include "core/onnx/model_io.h"

namespace lattice {

namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;
using WireFormatLite = google::protobuf::internal::WireFormatLite;

// Field numbers of onnx-ml.proto on the way from a model to its initializers' data.
constexpr int kModelGraph = 7;
constexpr int kGraphInitializer = 5;
constexpr int kTensorRawData = 9;
constexpr int kTensorExternalData = 13;
constexpr int kTensorDataLocation = 14;
constexpr int kEntryKey = 1, kEntryValue = 2;
constexpr const char* kReservedRefusal = "a tensor's external data names a location onnx-lattice reserves for itself";

constexpr uint32_t length_delimited(int field) {
  return WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
}

// The input read in chunks through ExternalData, so that a payload the walk skips is never read.
// After a skip the chunks start small (what follows a payload is mostly the next tensor's few
// header bytes) and double while the walk reads on, up to 1 MiB.
class ChunkedInput final : public google::protobuf::io::ZeroCopyInputStream {
 public:
  static constexpr uint64_t kFirstChunk = 16 << 10, kChunk = 1 << 20;
  ChunkedInput(ExternalData& input, uint64_t size) : input_(input), size_(size) {}

  bool Next(const void** data, int* size) override {
    if (backed_up_ > 0) {
      *data = chunk_.data() + chunk_.size() - backed_up_;
      *size = backed_up_;
      position_ += backed_up_;
      backed_up_ = 0;
      return true;
    }
    if (position_ >= size_) return false;
    uint64_t length = std::min(chunk_size_, size_ - position_);
    chunk_size_ = std::min(chunk_size_ * 2, kChunk);
    auto bytes = input_.read(kInputLocation, position_, length);
    if (!bytes) {
      error_ = bytes.error().message;
      return false;
    }
    chunk_ = std::move(bytes).value();
    *data = chunk_.data();
    *size = static_cast<int>(chunk_.size());
    position_ += chunk_.size();
    return true;
  }
  void BackUp(int count) override {
    backed_up_ = count;
    position_ -= count;
  }
  bool Skip(int count) override {
    // What is left of the current chunk first; past it, only the position moves.
    int from_chunk = std::min(count, backed_up_);
    backed_up_ -= from_chunk;
    position_ += from_chunk;
    uint64_t rest = static_cast<uint64_t>(count - from_chunk);
    if (rest == 0) return true;
    chunk_.clear();
    backed_up_ = 0;
    chunk_size_ = kFirstChunk;
    if (rest > size_ - position_) {
      position_ = size_;
      return false;
    }
    position_ += rest;
    return true;
  }
  int64_t ByteCount() const override { return static_cast<int64_t>(position_); }
  const std::string& error() const { return error_; }

 private:
  ExternalData& input_;
  uint64_t size_, position_ = 0;
  uint64_t chunk_size_ = kFirstChunk;
  std::string chunk_;
  int backed_up_ = 0;
  std::string error_;
};

void write_field(CodedOutputStream& out, int field, std::string_view bytes) {
  out.WriteTag(length_delimited(field));
  out.WriteVarint32(static_cast<uint32_t>(bytes.size()));
  out.WriteRaw(bytes.data(), static_cast<int>(bytes.size()));
}

std::string entry(std::string_view key, std::string_view value) {
  std::string bytes;
  {
    StringOutputStream stream(&bytes);
    CodedOutputStream out(&stream);
    write_field(out, kEntryKey, key);
    write_field(out, kEntryValue, value);
  }
  return bytes;
}

// Walks the input, copying every field it does not descend into as it is.
class Splitter {
 public:
  Splitter(CodedInputStream& in, ExternalData& input, uint64_t threshold)
      : in_(in), input_(input), threshold_(threshold) {}

  // The fields up to the current limit, into `out`; `descend(tag, out)` handles the fields on
  // the way to the initializers and returns false on a wire error.
  template <typename Descend>
  bool copy_fields(CodedOutputStream& out, Descend descend) {
    while (true) {
      uint32_t tag = 0;
      if (!read_tag(tag)) return false;
      if (tag == 0) return in_.ConsumedEntireMessage();
      bool handled = false;
      if (!descend(tag, out, handled)) return false;
      if (!handled && !skip_field(tag, out)) return false;
    }
  }

  bool model(CodedOutputStream& out) {
    return copy_fields(out, [&](uint32_t tag, CodedOutputStream& o, bool& handled) {
      if (tag != length_delimited(kModelGraph)) return true;
      handled = true;
      return nested(o, kModelGraph, [&](CodedOutputStream& g) { return graph(g); });
    });
  }

  // Why the model did not decode: a refusal of this reader's, or what its first bytes are.
  Status failure(std::span<const uint8_t> first, uint64_t size) const {
    if (!refusal_.empty()) return error("{}", refusal_);
    return undecodable_model(first, size);
  }

  uint64_t tensors_left_out = 0, bytes_left_out = 0;

 private:
  // A length-delimited field whose content `fn` rewrites: written with its new length.
  template <typename Fn>
  bool nested(CodedOutputStream& out, int field, Fn fn) {
    uint32_t length = 0;
    if (!read_length(length)) return false;
    // PushLimit clamps a length that runs past the enclosing message; protobuf refuses it.
    int enclosing = in_.BytesUntilLimit();
    if (enclosing >= 0 && length > static_cast<uint32_t>(enclosing)) return false;
    auto limit = in_.PushLimit(static_cast<int>(length));
    std::string content;
    bool ok;
    {
      StringOutputStream stream(&content);
      CodedOutputStream inner(&stream);
      ok = fn(inner) && in_.BytesUntilLimit() == 0;
    }
    in_.PopLimit(limit);
    if (ok) write_field(out, field, content);
    return ok;
  }

  bool graph(CodedOutputStream& out) {
    return copy_fields(out, [&](uint32_t tag, CodedOutputStream& o, bool& handled) {
      if (tag != length_delimited(kGraphInitializer)) return true;
      handled = true;
      return nested(o, kGraphInitializer, [&](CodedOutputStream& t) { return tensor(t); });
    });
  }

  // A TensorProto: its raw_data left out when large and the tensor has no say of its own about
  // where its data lives (an explicit data_location or external_data is kept as it is). The
  // skeleton's field order does not matter: protobuf writes it back in field-number order.
  bool tensor(CodedOutputStream& out) {
    // Only the last raw_data counts (protobuf's rule for a singular field given twice).
    std::optional<std::string> raw;
    int64_t payload = -1;
    uint32_t payload_length = 0;
    bool located = false;
    while (true) {
      uint32_t tag = 0;
      if (!read_tag(tag)) return false;
      if (tag == 0) break;
      int field = WireFormatLite::GetTagFieldNumber(tag);
      if (field == kTensorExternalData || field == kTensorDataLocation) located = true;
      if (tag == length_delimited(kTensorRawData) || tag == length_delimited(kTensorExternalData)) {
        uint32_t length = 0;
        if (!read_length(length)) return false;
        if (field == kTensorRawData && length >= threshold_) {
          raw.reset();
          payload = in_.CurrentPosition();
          payload_length = length;
          if (!in_.Skip(static_cast<int>(length))) return false;
          continue;
        }
        std::string bytes;
        if (!in_.ReadString(&bytes, static_cast<int>(length))) return false;
        if (field == kTensorRawData) {
          raw = std::move(bytes);
          payload = -1;
          continue;
        }
        if (bytes.find(kReservedLocationPrefix) != std::string::npos) {
          refusal_ = kReservedRefusal;
          return false;
        }
        write_field(out, field, bytes);
        continue;
      }
      if (!skip_field(tag, out)) return false;
    }
    if (!in_.ConsumedEntireMessage()) return false;
    if (payload >= 0 && located) {
      // The tensor says where its data lives: kept inline as it is, read back after all.
      auto bytes = input_.read(kInputLocation, static_cast<uint64_t>(payload), payload_length);
      if (!bytes) {
        refusal_ = fmt::format("cannot read the model: {}", bytes.error().message);
        return false;
      }
      raw = std::move(bytes).value();
      payload = -1;
    }
    if (raw) write_field(out, kTensorRawData, *raw);
    if (payload < 0) return true;
    write_field(out, kTensorExternalData, entry("location", kInputLocation));
    write_field(out, kTensorExternalData, entry("offset", std::to_string(payload)));
    write_field(out, kTensorExternalData, entry("length", std::to_string(payload_length)));
    out.WriteTag(WireFormatLite::MakeTag(kTensorDataLocation, WireFormatLite::WIRETYPE_VARINT));
    out.WriteVarint32(onnx::TensorProto::EXTERNAL);
    ++tensors_left_out;
    bytes_left_out += payload_length;
    return true;
  }

  // The split writes what it reads in protobuf's own encoding, so it must refuse whatever
  // protobuf's parser (parse_context.cc) refuses, which is stricter than CodedInputStream: a tag
  // or a length of more than 5 bytes, a length within 16 bytes of 2 GiB, field number 0.
  // Otherwise a malformed input would come out of the split well formed (found by the fuzzer).
  static constexpr int kMaxTagOrLengthBytes = 5;
  static constexpr uint32_t kMaxLength = std::numeric_limits<int>::max() - 16;

  // False if malformed; `tag` 0 where the message ends.
  bool read_tag(uint32_t& tag) {
    int start = in_.CurrentPosition();
    tag = in_.ReadTag();
    if (tag == 0) return true;
    return in_.CurrentPosition() - start <= kMaxTagOrLengthBytes && WireFormatLite::GetTagFieldNumber(tag) != 0;
  }

  bool read_length(uint32_t& length) {
    int start = in_.CurrentPosition();
    return in_.ReadVarint32(&length) && in_.CurrentPosition() - start <= kMaxTagOrLengthBytes && length <= kMaxLength;
  }

  // A field the split does not descend into, copied to `out`; WireFormatLite::SkipField would
  // read its lengths and a group's tags with CodedInputStream's looser rules.
  bool skip_field(uint32_t tag, CodedOutputStream& out) {
    switch (WireFormatLite::GetTagWireType(tag)) {
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
        uint32_t length = 0;
        std::string bytes;
        if (!read_length(length) || !in_.ReadString(&bytes, static_cast<int>(length))) return false;
        write_field(out, WireFormatLite::GetTagFieldNumber(tag), bytes);
        return true;
      }
      case WireFormatLite::WIRETYPE_START_GROUP: {
        if (!in_.IncrementRecursionDepth()) return false;
        out.WriteTag(tag);
        bool ok = true;
        uint32_t inner = 0;
        while (ok) {
          if (!read_tag(inner) || inner == 0) {
            ok = false;
          } else if (WireFormatLite::GetTagWireType(inner) == WireFormatLite::WIRETYPE_END_GROUP) {
            ok = WireFormatLite::GetTagFieldNumber(inner) == WireFormatLite::GetTagFieldNumber(tag);
            if (ok) out.WriteTag(inner);
            break;
          } else {
            ok = skip_field(inner, out);
          }
        }
        in_.DecrementRecursionDepth();
        return ok;
      }
      default:  // varints and fixed-size values: nothing inside them is a length or a tag
        return WireFormatLite::SkipField(&in_, tag, &out);
    }
  }

  CodedInputStream& in_;
  ExternalData& input_;
  uint64_t threshold_;
  std::string refusal_;
};

// The segments of a serialised message being rewritten: runs of its own bytes, new bytes, and
// ranges of the input, with the running size.
class Segments {
 public:
  void bytes(std::string_view b) {
    if (b.empty()) return;
    // Small runs join; a large run is never grown (that would copy it).
    if (list_.empty() || !list_.back().location.empty() || list_.back().bytes.size() >= kJoinBelow) list_.push_back({});
    list_.back().bytes += b;
    size_ += b.size();
  }
  void varint(uint64_t v) {
    uint8_t buffer[10];
    uint8_t* end = CodedOutputStream::WriteVarint64ToArray(v, buffer);
    bytes({reinterpret_cast<const char*>(buffer), static_cast<size_t>(end - buffer)});
  }
  void range(const std::string& location, uint64_t offset, uint64_t length) {
    list_.push_back({"", location, offset, length, nullptr});
    size_ += length;
  }
  // A length-delimited field holding `inner`: its segments moved, not copied.
  void field(int number, Segments&& inner) {
    varint(length_delimited(number));
    varint(inner.size_);
    for (auto& s : inner.list_) {
      if (!s.location.empty() || s.bytes.size() >= kJoinBelow) {
        size_ += s.size();
        list_.push_back(std::move(s));
      } else {
        bytes(s.bytes);
      }
    }
  }
  uint64_t size() const { return size_; }
  std::vector<DataSegment> take() { return std::move(list_); }

 private:
  static constexpr size_t kJoinBelow = 64 * 1024;
  std::vector<DataSegment> list_;
  uint64_t size_ = 0;
};

// One field of a serialised message: its number and where it lies (tag included).
struct WireField {
  uint32_t tag;
  int start, end;      // the whole field
  int content = -1;    // where a length-delimited field's content starts
};

// The fields of the message in `bytes`; nullopt if they do not parse.
std::optional<std::vector<WireField>> fields_of(std::string_view bytes) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  std::vector<WireField> fields;
  while (true) {
    int start = in.CurrentPosition();
    uint32_t tag = in.ReadTag();
    if (tag == 0) return in.ConsumedEntireMessage() ? std::optional(std::move(fields)) : std::nullopt;
    WireField f{tag, start, 0};
    if (WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length)) return std::nullopt;
      f.content = in.CurrentPosition();
      if (!in.Skip(static_cast<int>(length))) return std::nullopt;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return std::nullopt;
    }
    f.end = in.CurrentPosition();
    fields.push_back(f);
  }
}

std::string_view content(std::string_view bytes, const WireField& f) {
  return bytes.substr(static_cast<size_t>(f.content), static_cast<size_t>(f.end - f.content));
}

// The range of the input, of produced data, or of a data file to inline, a skeleton tensor refers
// to, if it does.
std::optional<ExternalRef> input_ref(std::string_view tensor, const std::vector<WireField>& fields) {
  ExternalRef ref;
  bool offset = false, length = false;
  for (const auto& f : fields) {
    if (f.tag != length_delimited(kTensorExternalData)) continue;
    auto entry = content(tensor, f);
    auto parts = fields_of(entry);
    if (!parts) return std::nullopt;
    std::string_view key, value;
    for (const auto& p : *parts) {
      if (p.tag == length_delimited(kEntryKey)) key = content(entry, p);
      if (p.tag == length_delimited(kEntryValue)) value = content(entry, p);
    }
    auto number = [&](uint64_t& v) {
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      return ec == std::errc() && end == value.data() + value.size();
    };
    if (key == "location") {
      if (value.starts_with(kInlinedPrefix)) {
        ref.location = value.substr(kInlinedPrefix.size());
      } else if (value == kInputLocation || value == kProducedLocation) {
        ref.location = value;
      } else {
        return std::nullopt;
      }
    }
    if (key == "offset") offset = number(ref.offset);
    if (key == "length") length = number(ref.length);
  }
  if (ref.location.empty() || !offset || !length) return std::nullopt;
  return ref;
}

constexpr uint32_t kDataLocationTag = WireFormatLite::MakeTag(kTensorDataLocation, WireFormatLite::WIRETYPE_VARINT);

// Protobuf writes known fields in number order, then unknown ones (a new field, or a known number
// given with another wire type). So raw_data (9) follows exactly the known fields numbered below
// 9, each with the wire type protobuf writes it with: dims and data_type varints, the rest
// (segment, packed float/int32/int64 data, string_data, name) length-delimited.
bool written_before_raw_data(uint32_t tag) {
  int number = WireFormatLite::GetTagFieldNumber(tag);
  if (number < 1 || number >= kTensorRawData) return false;
  auto wire = WireFormatLite::GetTagWireType(tag);
  return number <= 2 ? wire == WireFormatLite::WIRETYPE_VARINT : wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
}

// The tensor with its reference to the input or to produced data replaced by raw_data, where
// protobuf puts it.
Segments spliced_tensor(std::string_view tensor) {
  Segments out;
  auto fields = fields_of(tensor);
  auto ref = fields ? input_ref(tensor, *fields) : std::nullopt;
  if (!ref) {
    out.bytes(tensor);
    return out;
  }
  bool placed = false;
  auto place = [&] {
    out.varint(length_delimited(kTensorRawData));
    out.varint(ref->length);
    out.range(ref->location, ref->offset, ref->length);
    placed = true;
  };
  for (const auto& f : *fields) {
    // The reference's own fields (the tensor had none of its own, or it would have stayed inline),
    // and any copy of its data read into raw_data on the way: the reference is spliced in instead.
    if (f.tag == length_delimited(kTensorExternalData) || f.tag == kDataLocationTag ||
        f.tag == length_delimited(kTensorRawData)) {
      continue;
    }
    if (!placed && !written_before_raw_data(f.tag)) place();
    out.bytes(tensor.substr(static_cast<size_t>(f.start), static_cast<size_t>(f.end - f.start)));
  }
  if (!placed) place();
  return out;
}

// The fields of a message, with those numbered `field` rewritten by `rewrite`.
template <typename Rewrite>
std::optional<Segments> rewritten(std::string_view message, int field, Rewrite rewrite) {
  auto fields = fields_of(message);
  if (!fields) return std::nullopt;
  Segments out;
  for (const auto& f : *fields) {
    if (f.tag != length_delimited(field)) {
      out.bytes(message.substr(static_cast<size_t>(f.start), static_cast<size_t>(f.end - f.start)));
      continue;
    }
    auto inner = rewrite(content(message, f));
    if (!inner) return std::nullopt;
    out.field(field, std::move(*inner));
  }
  return out;
}

}  // namespace

Result<std::vector<DataSegment>> splice_skeleton(std::string serialized) {
  auto model = rewritten(serialized, kModelGraph, [&](std::string_view graph) {
    return rewritten(graph, kGraphInitializer,
                     [&](std::string_view tensor) { return std::optional(spliced_tensor(tensor)); });
  });
  if (!model) return error("could not write the converted model: its serialised form does not parse");
  if (model->size() > kMaxModelBytes) {
    return error("the converted model would be {:.1f} MiB, over the 2 GiB limit of a single-file ONNX model",
                 static_cast<double>(model->size()) / (1 << 20));
  }
  return model->take();
}

Result<uint64_t> SpanData::size(const std::string& location) {
  if (location != kInputLocation) return error("no such file");
  return bytes_.size();
}

Result<std::string> SpanData::read(const std::string& location, uint64_t offset, uint64_t length) {
  if (location != kInputLocation) return error("no such file");
  if (offset > bytes_.size() || length > bytes_.size() - offset) return error("range beyond the end");
  return std::string(reinterpret_cast<const char*>(bytes_.data() + offset), static_cast<size_t>(length));
}

std::optional<std::string_view> SpanData::view(const std::string& location, uint64_t offset, uint64_t length) {
  if (location != kInputLocation || offset > bytes_.size() || length > bytes_.size() - offset) return std::nullopt;
  return std::string_view(reinterpret_cast<const char*>(bytes_.data() + offset), static_cast<size_t>(length));
}

Result<uint64_t> ModelSource::size(const std::string& location) {
  if (location == kInputLocation) return input_.size(location);
  if (location == kProducedLocation) return produced_size_;
  if (!data_) return error("no data files were given to read it from");
  return data_->size(location);
}

Result<std::string> ModelSource::read(const std::string& location, uint64_t offset, uint64_t length) {
  if (location == kInputLocation) return input_.read(location, offset, length);
  if (location == kProducedLocation) {
    auto piece = produced({location, offset, length});
    if (!piece) return error("no produced data there");
    return materialise(*piece, *this);
  }
  if (!data_) return error("no data files were given to read it from");
  return data_->read(location, offset, length);
}

bool ModelSource::has_files() const { return data_ != nullptr && data_->has_files(); }

std::optional<std::string_view> ModelSource::view(const std::string& location, uint64_t offset, uint64_t length) {
  if (location == kInputLocation) return input_.view(location, offset, length);
  if (location == kProducedLocation || !data_) return std::nullopt;
  return data_->view(location, offset, length);
}

ExternalRef ModelSource::store(std::shared_ptr<const Deferred> data) {
  ExternalRef ref{kProducedLocation, produced_size_, data->length()};
  produced_size_ += ref.length;
  produced_.emplace(ref.offset, std::move(data));
  return ref;
}

std::optional<ExternalRef> ModelSource::defer(std::shared_ptr<const Deferred> data) {
  if (data->length() < defer_from_) return std::nullopt;
  return store(std::move(data));
}

// The core refers to each piece whole.
std::shared_ptr<const Deferred> ModelSource::produced(const ExternalRef& ref) {
  auto piece = produced_.find(ref.offset);
  bool whole = ref.location == kProducedLocation && piece != produced_.end() && piece->second->length() == ref.length;
  if (!whole) return nullptr;
  return piece->second;
}

void ModelSource::set_aside_produced(onnx::ModelProto& model) {
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    if (is_external(t) || !t.has_raw_data() || t.raw_data().size() < kSkeletonThreshold) continue;
    refer_to(t, store(std::make_shared<HeldBytes>(std::move(*t.mutable_raw_data()))));
  }
}

Result<std::vector<DataSegment>> ModelSource::resolve_produced(std::vector<DataSegment> segments) {
  for (auto& s : segments) {
    if (s.location != kProducedLocation) continue;
    auto piece = produced({s.location, s.offset, s.length});
    if (!piece) return error("could not write the converted model: it refers to produced data that is not there");
    s = DataSegment{"", "", 0, 0, std::move(piece)};
  }
  return segments;
}

Status check_reserved_locations(onnx::ModelProto& skeleton_model, const Skeleton& skeleton) {
  // for_each_tensor would give a model without a graph an empty one (validation refuses those).
  if (!skeleton_model.has_graph()) return ok_status();
  uint64_t reserved = 0;
  for_each_tensor(skeleton_model, [&](onnx::TensorProto& t, const TensorPlace&) {
    for (const auto& entry : t.external_data()) {
      if (entry.value().starts_with(kReservedLocationPrefix)) ++reserved;
    }
  });
  if (reserved == skeleton.tensors_left_out) return ok_status();
  return error("{}", kReservedRefusal);
}

Result<Skeleton> split_skeleton(ExternalData& input, uint64_t size, uint64_t threshold) {
  if (auto s = check_model_size(size); !s) return s.error();
  ChunkedInput chunks(input, size);
  Skeleton skeleton;
  bool ok;
  Status failed = ok_status();
  {
    CodedInputStream in(&chunks);
    StringOutputStream stream(&skeleton.bytes);
    CodedOutputStream out(&stream);
    Splitter splitter(in, input, threshold);
    ok = splitter.model(out) && chunks.ByteCount() == static_cast<int64_t>(size);
    if (!ok) {
      auto first = input.read(kInputLocation, 0, std::min<uint64_t>(size, kFileKindBytes));
      std::span<const uint8_t> head;
      if (first) head = {reinterpret_cast<const uint8_t*>(first->data()), first->size()};
      failed = splitter.failure(head, size);
    }
    skeleton.tensors_left_out = splitter.tensors_left_out;
    skeleton.bytes_left_out = splitter.bytes_left_out;
  }
  if (!chunks.error().empty()) return error("cannot read the model: {}", chunks.error());
  if (!ok) return failed.error();
  return skeleton;
}

}  // namespace lattice
