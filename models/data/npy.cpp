#include "models/data/npy.hpp"

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
  const std::size_t end = begin < header.size() && header[begin] == '('
                              ? header.find(')', begin)
                              : header.find_first_of(",}", begin);
  if (end == std::string::npos)
    throw DataError(path, "the header's '" + key + "' has no end");
  return header.substr(begin, end - begin + (header[end] == ')' ? 1 : 0));
}

// numpy's largest array of 4-byte elements (2^61 bytes) is far beyond any file; this bound keeps
// byte counts exact in 64 bits while refusing a header that declares more than any disk holds.
constexpr std::int64_t kMaxNpyElements = std::int64_t{1} << 56;

Shape parse_shape(const std::string& tuple, const std::string& path) {
  Shape shape;
  std::int64_t elements = 1;
  std::size_t i = 1;
  while (i < tuple.size()) {
    if (std::isdigit(static_cast<unsigned char>(tuple[i]))) {
      std::int64_t dim = 0;
      for (; i < tuple.size() && std::isdigit(static_cast<unsigned char>(tuple[i])); ++i) {
        dim = dim * 10 + (tuple[i] - '0');
        if (dim > kMaxNpyElements)
          throw DataError(path, "the shape " + tuple + " has a dimension past 2^56 elements");
      }
      if (dim != 0 && elements > kMaxNpyElements / dim)
        throw DataError(path, "the shape " + tuple + " holds more than 2^56 elements");
      elements *= dim;
      shape.push_back(dim);
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
  check_regular_file(path);
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

NpyHeader parse_header(const std::vector<char>& bytes, const std::string& path,
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
  Shape shape = parse_shape(header_field(header, "shape", path), path);
  const auto data_bytes = static_cast<std::size_t>(element_count(shape)) * 4;  // below 2^58
  return {std::move(shape), preamble + length, data_bytes};
}

RawArray parse_array(const std::vector<char>& bytes, const std::string& path,
                     const std::string& expected_descr) {
  NpyHeader header = parse_header(bytes, path, expected_descr);
  const std::size_t found = bytes.size() - header.header_bytes;
  if (found < header.data_bytes) {
    throw DataError(path, "expected " + std::to_string(header.data_bytes) +
                              " bytes of array data, found " + std::to_string(found));
  }
  const auto data_begin = bytes.begin() + static_cast<std::ptrdiff_t>(header.header_bytes);
  RawArray array{std::move(header.shape), {}};
  array.data.assign(data_begin, data_begin + static_cast<std::ptrdiff_t>(header.data_bytes));
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

std::size_t npy_header_bytes(const std::vector<char>& first_bytes, const std::string& name) {
  return (first_bytes.size() > 6 && first_bytes[6] == 1 ? 10 : 12) +
         header_length(first_bytes, name);
}

NpyHeader parse_npy_f32_header(const std::vector<char>& bytes, const std::string& name) {
  return parse_header(bytes, name, "<f4");
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
