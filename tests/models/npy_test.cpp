#include "models/data/npy.hpp"

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include <catch2/catch.hpp>

#include "tests/test_support.hpp"

using namespace ipusim::models;
using ipusim::testing::error_of;

namespace {

std::string scratch_file(const std::string& name) {
  const auto directory = std::filesystem::path(IPUSIM_BINARY_DIR) / "kernels_tests_npy";
  std::filesystem::create_directories(directory);
  const auto path = directory / name;
  std::filesystem::remove(path);
  return path.string();
}

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A .npy header numpy would write for `dict`, padded to 64 bytes.
std::string npy_header(std::string dict) {
  dict.append(64 - (10 + dict.size() + 1) % 64, ' ');
  dict += '\n';
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(dict.size()) + '\0' + dict;
}

}  // namespace

TEST_CASE("a float32 tensor is written as numpy writes it and read back bit for bit") {
  const std::string path = scratch_file("weights.npy");
  const Tensor tensor({2, 3}, std::vector<float>{1, -2, 0.1f, 3e-8f, 65504, -0.0f});
  write_npy(path, tensor);
  const std::string bytes = contents(path);
  CHECK(bytes.size() == 128 + 24);
  CHECK(bytes.substr(0, 128) ==
        npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
  CHECK(bit_identical(read_npy_f32(path), tensor));
}

TEST_CASE("one-dimensional and scalar shapes use numpy's tuple spelling") {
  const std::string vector_path = scratch_file("vector.npy");
  write_npy(vector_path, Tensor({5}, 2.0f));
  CHECK(contents(vector_path).find("'shape': (5,), }") != std::string::npos);
  CHECK(read_npy_f32(vector_path).shape() == Shape{5});
  const std::string scalar_path = scratch_file("scalar.npy");
  write_npy(scalar_path, Tensor(Shape{}, 7.0f));
  CHECK(contents(scalar_path).find("'shape': (), }") != std::string::npos);
  CHECK(read_npy_f32(scalar_path)[0] == 7.0f);
}

TEST_CASE("an int32 array round-trips through a '<i4' file") {
  const std::string path = scratch_file("labels.npy");
  const std::vector<std::int32_t> labels{9, 2, 1, -1};
  write_npy(path, {2, 2}, labels);
  CHECK(contents(path).find("'descr': '<i4'") != std::string::npos);
  const Int32Array array = read_npy_i32(path);
  CHECK(array.shape == Shape{2, 2});
  CHECK(array.values == labels);
}

TEST_CASE("a file of another dtype is refused with both dtypes") {
  const std::string path = scratch_file("doubles.npy");
  write_text(path, npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }") +
                       std::string(8, '\0'));
  CHECK(error_of<DataError>([&] { read_npy_f32(path); }) ==
        path + ": holds '<f8' data, expected '<f4'");
  write_npy(path, {1}, std::vector<std::int32_t>{1});
  CHECK(error_of<DataError>([&] { read_npy_f32(path); }) ==
        path + ": holds '<i4' data, expected '<f4'");
}

TEST_CASE("broken .npy files are refused with the reason") {
  const std::string path = scratch_file("broken.npy");
  write_text(path, "PK\x03\x04 not numpy at all");
  CHECK(error_of<DataError>([&] { read_npy_f32(path); }) ==
        path + ": not a .npy file (no \\x93NUMPY magic)");
  write_text(path, npy_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }") +
                       std::string(16, '\0'));
  CHECK(error_of<DataError>([&] { read_npy_f32(path); }) ==
        path + ": Fortran-order arrays are not supported");
  write_text(path, npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }") +
                       std::string(10, '\0'));
  CHECK(error_of<DataError>([&] { read_npy_f32(path); }) ==
        path + ": expected 16 bytes of array data, found 10");
  CHECK(error_of<DataError>([&] { read_npy_f32(path + ".absent"); }) ==
        path + ".absent: file not found");
}

// The bytes of a '<f4' file whose header declares `shape` and that holds no data.
std::vector<char> declared_only(const std::string& shape) {
  const std::string bytes =
      npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }");
  return {bytes.begin(), bytes.end()};
}

TEST_CASE("a header declaring more than 2^56 elements is refused before anything is allocated") {
  CHECK(error_of<DataError>([] {
          parse_npy_f32(declared_only("(99999999999999999999999,)"), "a.npy");
        }) == "a.npy: the shape (99999999999999999999999,) has a dimension past 2^56 elements");
  CHECK(error_of<DataError>([] {
          parse_npy_f32(declared_only("(4611686018427387904,)"), "a.npy");
        }) == "a.npy: the shape (4611686018427387904,) has a dimension past 2^56 elements");
  CHECK(error_of<DataError>([] {
          parse_npy_f32(declared_only("(4294967296, 4294967296)"), "a.npy");
        }) == "a.npy: the shape (4294967296, 4294967296) holds more than 2^56 elements");
}

TEST_CASE("a header within bounds gives the shape and the byte counts, data or not") {
  const NpyHeader header = parse_npy_f32_header(declared_only("(1024, 1024, 1024)"), "a.npy");
  CHECK(header.shape == Shape{1024, 1024, 1024});
  CHECK(header.header_bytes == 128);
  CHECK(header.data_bytes == std::size_t{1} << 32);
  CHECK(npy_header_bytes(declared_only("(3,)"), "a.npy") == 128);
  CHECK(error_of<DataError>([] { parse_npy_f32(declared_only("(1024, 1024, 1024)"), "a.npy"); }) ==
        "a.npy: expected 4294967296 bytes of array data, found 0");
}

TEST_CASE("a header whose shape has no end is refused") {
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2";
  const std::string bytes =
      std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(dict.size()) + '\0' + dict;
  CHECK(error_of<DataError>([&] {
          parse_npy_f32({bytes.begin(), bytes.end()}, "a.npy");
        }) == "a.npy: the header's 'shape' has no end");
}
