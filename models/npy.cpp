#include "models/npy.hpp"

#include <bit>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"

namespace ipusim::models {
namespace {

static_assert(std::endian::native == std::endian::little,
              "npy files are written little-endian ('<f4', '<i4') straight from memory");

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicBytes = 6;
constexpr std::size_t kAlignment = 64;  // numpy pads headers so the data starts aligned

std::string shape_tuple(const Shape& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

NpyBytes encode(const char* descr, const Shape& shape, const void* data, std::size_t bytes) {
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shape_tuple(shape) + ", }";
  const std::size_t preamble = kMagicBytes + 2 + 2;
  header.append((kAlignment - (preamble + header.size() + 1) % kAlignment) % kAlignment, ' ');
  header += '\n';
  const auto length = static_cast<std::uint16_t>(header.size());
  std::string preamble_bytes(kMagic, kMagicBytes);
  preamble_bytes += {char(1), char(0), static_cast<char>(length & 0xff),  // version 1.0
                     static_cast<char>(length >> 8)};
  return {preamble_bytes + header, std::string_view(static_cast<const char*>(data), bytes)};
}

void write_file(const std::string& path, const NpyBytes& bytes) {
  core::OutputSet outputs;
  outputs.add(path);
  outputs.write(path, {bytes.header, bytes.data});
  outputs.commit();
}

// The value text of `key` in a header dict, up to the next top-level comma or brace.
std::string header_field(const std::string& header, const std::string& key,
                         const std::string& path) {
  const std::size_t at = header.find("'" + key + "':");
  if (at == std::string::npos)
    throw DataError(path, "the header has no '" + key + "'");
  std::size_t begin = at + key.size() + 3;
  while (begin < header.size() && header[begin] == ' ')
    ++begin;
  const std::size_t end =
      header[begin] == '(' ? header.find(')', begin) + 1 : header.find_first_of(",}", begin);
  return header.substr(begin, end - begin);
}

Shape parse_shape(const std::string& tuple, const std::string& path) {
  Shape shape;
  std::size_t i = 1;
  while (i < tuple.size()) {
    if (std::isdigit(static_cast<unsigned char>(tuple[i]))) {
      std::size_t used = 0;
      shape.push_back(std::stoll(tuple.substr(i), &used));
      i += used;
    } else if (tuple[i] == ',' || tuple[i] == ' ' || tuple[i] == ')') {
      ++i;
    } else {
      throw DataError(path, "cannot read the shape " + tuple);
    }
  }
  return shape;
}

struct RawArray {
  Shape shape;
  std::vector<char> data;
};

std::vector<char> read_file(const std::string& path) {
  if (!std::filesystem::is_regular_file(path))
    throw DataError(path, "file not found");
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

std::size_t header_length(const std::vector<char>& bytes, const std::string& path) {
  if (bytes.size() < kMagicBytes + 4 || std::memcmp(bytes.data(), kMagic, kMagicBytes) != 0)
    throw DataError(path, "not a .npy file (no \\x93NUMPY magic)");
  const auto byte = [&](std::size_t i) { return static_cast<std::size_t>(bytes[i] & 0xff); };
  const std::size_t major = byte(6);
  if (major == 1)
    return byte(8) | byte(9) << 8;
  if (major == 2 && bytes.size() >= 12)
    return byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
  throw DataError(path, "unsupported .npy format version " + std::to_string(major) + "." +
                            std::to_string(byte(7)));
}

RawArray parse_array(const std::vector<char>& bytes, const std::string& path,
                     const std::string& expected_descr) {
  const std::size_t length = header_length(bytes, path);
  const std::size_t preamble = bytes[6] == 1 ? 10 : 12;
  if (bytes.size() < preamble + length)
    throw DataError(path, "the header is truncated");
  const std::string header(bytes.data() + preamble, length);
  const std::string descr = header_field(header, "descr", path);
  if (descr != "'" + expected_descr + "'")
    throw DataError(path, "holds " + descr + " data, expected '" + expected_descr + "'");
  if (header_field(header, "fortran_order", path) != "False")
    throw DataError(path, "Fortran-order arrays are not supported");
  RawArray array{parse_shape(header_field(header, "shape", path), path), {}};
  const auto expected = static_cast<std::size_t>(element_count(array.shape)) * 4;
  const std::size_t found = bytes.size() - preamble - length;
  if (found < expected) {
    throw DataError(path, "expected " + std::to_string(expected) + " bytes of array data, found " +
                              std::to_string(found));
  }
  const auto data_begin = bytes.begin() + static_cast<std::ptrdiff_t>(preamble + length);
  array.data.assign(data_begin, data_begin + static_cast<std::ptrdiff_t>(expected));
  return array;
}

RawArray read_array(const std::string& path, const std::string& expected_descr) {
  return parse_array(read_file(path), path, expected_descr);
}

}  // namespace

NpyBytes npy_bytes(const Tensor& tensor) {
  return encode("<f4", tensor.shape(), tensor.data(),
                static_cast<std::size_t>(tensor.elements()) * sizeof(float));
}

NpyBytes npy_bytes(const Shape& shape, std::span<const std::int32_t> values) {
  IPUSIM_CHECK(element_count(shape) == static_cast<std::int64_t>(values.size()));
  return encode("<i4", shape, values.data(), values.size() * sizeof(std::int32_t));
}

void write_npy(const std::string& path, const Tensor& tensor) {
  write_file(path, npy_bytes(tensor));
}

void write_npy(const std::string& path, const Shape& shape, std::span<const std::int32_t> values) {
  write_file(path, npy_bytes(shape, values));
}

Tensor parse_npy_f32(const std::vector<char>& bytes, const std::string& name) {
  RawArray array = parse_array(bytes, name, "<f4");
  Tensor tensor(array.shape);
  std::memcpy(tensor.data(), array.data.data(), array.data.size());
  return tensor;
}

Tensor read_npy_f32(const std::string& path) {
  RawArray array = read_array(path, "<f4");
  Tensor tensor(array.shape);
  std::memcpy(tensor.data(), array.data.data(), array.data.size());
  return tensor;
}

Int32Array read_npy_i32(const std::string& path) {
  RawArray array = read_array(path, "<i4");
  Int32Array result{array.shape, std::vector<std::int32_t>(array.data.size() / 4)};
  std::memcpy(result.values.data(), array.data.data(), array.data.size());
  return result;
}

}  // namespace ipusim::models
