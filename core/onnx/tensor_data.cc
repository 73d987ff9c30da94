#include "core/onnx/tensor_data.h"

#include <fmt/ranges.h>

#include "core/onnx/tensor_type.h"

namespace lattice {

using onnx::TensorProto;

std::string format_dims(const TensorProto& tensor) {
  return fmt::format("[{}]", fmt::join(tensor.dims(), ", "));
}

Result<uint64_t> element_count(const TensorProto& tensor, std::string_view what) {
  constexpr uint64_t kLimit = uint64_t{1} << 62;
  uint64_t count = 1;
  for (int64_t dim : tensor.dims()) {
    if (dim < 0) return error("{} has a negative dimension in dims {}", what, format_dims(tensor));
    if (dim != 0 && count > kLimit / static_cast<uint64_t>(dim)) {
      return error("{} has dims {} whose element count overflows", what, format_dims(tensor));
    }
    count *= static_cast<uint64_t>(dim);
  }
  return count;
}

namespace {

// How many entries of its typed field a tensor of `count` elements needs, and that field's size.
struct TypedField {
  std::string_view name;
  uint64_t held;
  uint64_t needed;
};

std::optional<TypedField> typed_field(const TensorProto& t, uint64_t count) {
  switch (t.data_type()) {
    case TensorProto::FLOAT: return TypedField{"float_data", static_cast<uint64_t>(t.float_data_size()), count};
    case TensorProto::COMPLEX64: return TypedField{"float_data", static_cast<uint64_t>(t.float_data_size()), 2 * count};
    case TensorProto::DOUBLE: return TypedField{"double_data", static_cast<uint64_t>(t.double_data_size()), count};
    case TensorProto::COMPLEX128: return TypedField{"double_data", static_cast<uint64_t>(t.double_data_size()), 2 * count};
    case TensorProto::INT64: return TypedField{"int64_data", static_cast<uint64_t>(t.int64_data_size()), count};
    case TensorProto::UINT32:
    case TensorProto::UINT64: return TypedField{"uint64_data", static_cast<uint64_t>(t.uint64_data_size()), count};
    case TensorProto::STRING: return TypedField{"string_data", static_cast<uint64_t>(t.string_data_size()), count};
    default: break;
  }
  auto bits = onnx_types::element_bits(t.data_type());
  if (!bits) return std::nullopt;
  // Every other fixed-width type is stored one element per int32 (4-bit types: two per int32).
  uint64_t needed = *bits == 4 ? (count + 1) / 2 : count;
  return TypedField{"int32_data", static_cast<uint64_t>(t.int32_data_size()), needed};
}

}  // namespace

Result<std::optional<uint64_t>> raw_bytes_needed(const onnx::TensorProto& t, std::string_view what) {
  auto count = element_count(t, what);
  if (!count) return count.error();
  if (t.data_type() == TensorProto::UNDEFINED) return error("{} has no data type", what);
  auto bits = onnx_types::element_bits(t.data_type());
  if (!bits) return std::optional<uint64_t>();
  return std::optional<uint64_t>(onnx_types::storage_bytes(*bits, *count));
}

Status check_not_string(const TensorProto& t, std::string_view what, std::string_view stored_in) {
  if (t.data_type() == TensorProto::STRING) return error("{} is a string tensor stored in {}", what, stored_in);
  return ok_status();
}

Status check_not_segmented(const TensorProto& t, std::string_view what) {
  if (t.has_segment()) return error("{} is a segmented tensor, which onnx-lattice does not support", what);
  return ok_status();
}

Status check_tensor_data(const TensorProto& t, std::string_view what) {
  // An external tensor is checked by external_ref; once read (load_needed_values) its raw_data
  // is checked as any other.
  if ((t.data_location() == TensorProto::EXTERNAL || t.external_data_size() > 0) && !t.has_raw_data()) {
    std::string file;
    for (const auto& entry : t.external_data()) {
      if (entry.key() == "location") file = entry.value();
    }
    return error("{} keeps its data in an external file ('{}'), which was not read", what, file);
  }
  if (auto s = check_not_segmented(t, what); !s) return s;
  auto needed = raw_bytes_needed(t, what);
  if (!needed) return needed.error();
  auto type = onnx_types::element_name(t.data_type());
  if (t.has_raw_data()) {
    if (!*needed) return check_not_string(t, what, "raw_data");  // else a newer type: its size cannot be checked
    if (t.raw_data().size() != **needed) {
      return error("{} holds {} bytes of raw_data, but dims {} of type {} need {} bytes", what,
                   t.raw_data().size(), format_dims(t), type, **needed);
    }
    return ok_status();
  }
  auto count = element_count(t, what);
  if (!count) return count.error();
  auto field = typed_field(t, *count);
  if (field && field->held != field->needed) {
    return error("{} holds {} values in {}, but dims {} of type {} need {}", what, field->held, field->name,
                 format_dims(t), type, field->needed);
  }
  return ok_status();
}

}  // namespace lattice
