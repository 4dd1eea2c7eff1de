#pragma once
// .npy files (format 1.0, C order) of float32 ('<f4') and int32 ('<i4') arrays, so that
// `ipusim train --save/--load` exchanges parameters with numpy.save/numpy.load. Reading also
// accepts format 2.0; problems throw DataError naming the file. Files are written through
// core::OutputSet, whose errors are core::ConfigErrors.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/data/data.hpp"
#include "models/kernels/tensor.hpp"

namespace ipusim::models {

// An int32 array as read from a '<i4' .npy file.
struct Int32Array {
  Shape shape;
  std::vector<std::int32_t> values;
};

// The bytes of a .npy file: its header, then the array's data where it lies in memory (a
// training set's inputs run to hundreds of MB, so they are not copied).
struct NpyBytes {
  std::string header;
  std::string_view data;
};
NpyBytes npy_bytes(const Tensor& tensor);
NpyBytes npy_bytes(const Shape& shape, std::span<const std::int32_t> values);

void write_npy(const std::string& path, const Tensor& tensor);
void write_npy(const std::string& path, const Shape& shape, std::span<const std::int32_t> values);

Tensor read_npy_f32(const std::string& path);
// A '<f4' .npy file's bytes as read from elsewhere (an .npz member); `name` is for errors.
Tensor parse_npy_f32(const std::vector<char>& bytes, const std::string& name);
Int32Array read_npy_i32(const std::string& path);

// A '<f4' .npy header: the array's shape, and how many bytes the preamble and header take (the
// data follows them) and the data takes. A shape of more than 2^56 elements is refused, so the
// byte counts are exact.
struct NpyHeader {
  Shape shape;
  std::size_t header_bytes = 0;
  std::size_t data_bytes = 0;
};
// How many bytes the preamble and header of a .npy file take, from its first 12 bytes (all of
// them when the file is shorter); throws DataError naming `name` for no .npy file.
std::size_t npy_header_bytes(const std::vector<char>& first_bytes, const std::string& name);
// The header of a '<f4' file from its first npy_header_bytes() bytes (or more).
NpyHeader parse_npy_f32_header(const std::vector<char>& bytes, const std::string& name);

}  // namespace ipusim::models
