#include "models/data/data.hpp"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <sstream>
#include <utility>

#include "models/kernels/init.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

constexpr std::uint32_t kIdxImagesMagic = 0x00000803;
constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;
// Fashion-MNIST's largest file is 47 MB decompressed; the bound stops a gzip bomb.
constexpr std::size_t kMaxIdxBytes = std::size_t{1} << 30;

// Reads `file` a chunk at a time, handing each to `take`; throws on corrupt data or past
// kMaxIdxBytes, counted as it inflates, so a bomb is refused in a chunk's memory.
template <typename Take>
void inflate_chunks(gzFile file, const std::string& path, Take take) {
  std::vector<std::uint8_t> chunk(1 << 20);
  std::size_t total = 0;
  int read = 0;
  while ((read = gzread(file, chunk.data(), static_cast<unsigned>(chunk.size()))) > 0) {
    total += static_cast<std::size_t>(read);
    if (total > kMaxIdxBytes) {
      gzclose(file);
      throw DataError(path, "decompresses to more than 1 GiB, the most ipusim reads");
    }
    take(chunk.data(), static_cast<std::size_t>(read));
  }
  if (read < 0) {
    int error = Z_OK;
    const std::string message = gzerror(file, &error);
    gzclose(file);
    throw DataError(path, "corrupt gzip data (" + message + ")");
  }
}

// The whole decompressed file, in memory of its size: a first pass counts it (and refuses a
// bomb), a second reads it into a buffer of that size. gzread reads uncompressed files as
// they are.
std::vector<std::uint8_t> read_gzip_file(const std::string& path) {
  check_regular_file(path);
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr)
    throw DataError(path, "cannot open the file");
  std::size_t size = 0;
  inflate_chunks(file, path, [&](const std::uint8_t*, std::size_t n) { size += n; });
  std::vector<std::uint8_t> bytes;
  bytes.reserve(size);
  if (gzrewind(file) != 0) {
    gzclose(file);
    throw DataError(path, "cannot read the file again after counting it");
  }
  inflate_chunks(file, path, [&](const std::uint8_t* data, std::size_t n) {
    bytes.insert(bytes.end(), data, data + std::min(n, size - bytes.size()));
  });
  gzclose(file);
  return bytes;
}

std::uint32_t big_endian_u32(const std::vector<std::uint8_t>& bytes, std::size_t offset) {
  return (std::uint32_t{bytes[offset]} << 24) | (std::uint32_t{bytes[offset + 1]} << 16) |
         (std::uint32_t{bytes[offset + 2]} << 8) | std::uint32_t{bytes[offset + 3]};
}

std::string hex32(std::uint32_t value) {
  std::ostringstream text;
  text << "0x";
  text.width(8);
  text.fill('0');
  text << std::hex << value;
  return text.str();
}

// Checks the size and magic number of an IDX header and returns its dimensions.
std::vector<std::int64_t> read_idx_header(const std::vector<std::uint8_t>& bytes,
                                          const std::string& path, std::uint32_t magic,
                                          const std::string& kind) {
  const std::size_t dims = magic & 0xffu;
  const std::size_t header_bytes = 4 + 4 * dims;
  if (bytes.size() >= 4 && big_endian_u32(bytes, 0) != magic) {
    throw DataError(path, "bad magic number " + hex32(big_endian_u32(bytes, 0)) + ", expected " +
                              hex32(magic) + " (" + kind + ")");
  }
  if (bytes.size() < header_bytes) {
    throw DataError(path, "expected a " + std::to_string(header_bytes) + "-byte header, found " +
                              std::to_string(bytes.size()));
  }
  std::vector<std::int64_t> extents;
  for (std::size_t d = 0; d < dims; ++d)
    extents.push_back(big_endian_u32(bytes, 4 + 4 * d));
  return extents;
}

// Drops the header and checks that the payload holds `expected` bytes.
std::vector<std::uint8_t> idx_payload(std::vector<std::uint8_t> bytes, std::size_t header_bytes,
                                      std::int64_t expected, const std::string& path,
                                      const std::string& what) {
  const auto found = static_cast<std::int64_t>(bytes.size() - header_bytes);
  if (found < expected) {
    throw DataError(path, "expected " + std::to_string(expected) + " bytes of " + what +
                              ", found " + std::to_string(found));
  }
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(header_bytes));
  bytes.resize(static_cast<std::size_t>(expected));
  return bytes;
}

}  // namespace

void check_regular_file(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status))
    throw DataError(path, "file not found");
  if (!std::filesystem::is_regular_file(status))
    throw DataError(path,
                    "not a regular file (a folder, a FIFO or a device): ipusim reads "
                    "data and weights from regular files only");
}

DataError::DataError(std::string path, std::string problem)
    : std::runtime_error(path + ": " + problem),
      path_(std::move(path)),
      problem_(std::move(problem)) {}

void DataSource::shuffle_each_epoch(std::uint64_t seed) {
  shuffle_seed_ = seed;
  permutation_epoch_ = -1;
}

void DataSource::batch(std::int64_t first_index, std::int64_t count, Tensor& inputs,
                       std::vector<int>& labels) {
  IPUSIM_CHECK(first_index >= 0 && count >= 0 && size() > 0);
  inputs = Tensor([&] {
    Shape shape{count};
    shape.insert(shape.end(), sample_shape().begin(), sample_shape().end());
    return shape;
  }());
  const std::int64_t per_sample = labels_per_sample();
  labels.assign(static_cast<std::size_t>(count * per_sample), 0);
  const std::int64_t sample_elements = element_count(sample_shape());
  for (std::int64_t i = 0; i < count; ++i) {
    const std::span<float> values = inputs.values().subspan(
        static_cast<std::size_t>(i * sample_elements), static_cast<std::size_t>(sample_elements));
    const std::span<int> sample_labels = std::span<int>(labels).subspan(
        static_cast<std::size_t>(i * per_sample), static_cast<std::size_t>(per_sample));
    read_sample(dataset_index(first_index + i), values, sample_labels);
  }
}

std::int64_t DataSource::dataset_index(std::int64_t stream_index) {
  const std::int64_t position = stream_index % size();
  if (!shuffle_seed_)
    return position;
  const std::int64_t epoch = stream_index / size();
  if (epoch != permutation_epoch_) {
    permutation_.resize(static_cast<std::size_t>(size()));
    std::iota(permutation_.begin(), permutation_.end(), 0);
    Rng rng(derive_seed(*shuffle_seed_, static_cast<std::uint64_t>(epoch)));
    for (std::size_t i = permutation_.size() - 1; i > 0; --i)
      std::swap(permutation_[i], permutation_[rng.below(i + 1)]);
    permutation_epoch_ = epoch;
  }
  return permutation_[static_cast<std::size_t>(position)];
}

IdxImages read_idx_images(const std::string& path) {
  std::vector<std::uint8_t> bytes = read_gzip_file(path);
  const std::vector<std::int64_t> extents =
      read_idx_header(bytes, path, kIdxImagesMagic, "IDX unsigned-byte images");
  IdxImages images{extents[0], extents[1], extents[2], {}};
  images.pixels = idx_payload(std::move(bytes), 16, images.count * images.rows * images.cols, path,
                              "image data");
  return images;
}

std::vector<std::uint8_t> read_idx_labels(const std::string& path) {
  std::vector<std::uint8_t> bytes = read_gzip_file(path);
  const std::vector<std::int64_t> extents =
      read_idx_header(bytes, path, kIdxLabelsMagic, "IDX unsigned-byte labels");
  return idx_payload(std::move(bytes), 8, extents[0], path, "label data");
}

FashionMnistFiles fashion_mnist_files(const std::string& directory, FashionMnistSplit split) {
  const std::string prefix = directory + (split == FashionMnistSplit::kTrain ? "/train" : "/t10k");
  return {prefix + "-images-idx3-ubyte.gz", prefix + "-labels-idx1-ubyte.gz"};
}

FashionMnist::FashionMnist(const std::string& directory, FashionMnistSplit split,
                           Shape sample_shape)
    : sample_shape_(std::move(sample_shape)) {
  const auto [images_path, labels_path] = fashion_mnist_files(directory, split);
  images_ = read_idx_images(images_path);
  labels_ = read_idx_labels(labels_path);
  if (static_cast<std::int64_t>(labels_.size()) != images_.count) {
    throw DataError(labels_path, "holds " + std::to_string(labels_.size()) + " labels for " +
                                     std::to_string(images_.count) + " images");
  }
  if (element_count(sample_shape_) != images_.rows * images_.cols) {
    throw DataError(images_path, "a model input of shape " + shape_text(sample_shape_) + " has " +
                                     std::to_string(element_count(sample_shape_)) +
                                     " elements, but the images have " +
                                     std::to_string(images_.rows * images_.cols));
  }
}

void FashionMnist::read_sample(std::int64_t index, std::span<float> values, std::span<int> labels) {
  const std::uint8_t* pixels =
      images_.pixels.data() + index * static_cast<std::int64_t>(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(pixels[i]) / 255.0f;
  labels[0] = labels_[static_cast<std::size_t>(index)];
}

SyntheticSource::SyntheticSource(std::uint64_t seed, std::int64_t size, Shape sample_shape,
                                 std::int64_t classes)
    : seed_(seed), size_(size), sample_shape_(std::move(sample_shape)), classes_(classes) {
  IPUSIM_CHECK(size_ > 0 && classes_ > 0);
  Rng rng(derive_seed(seed_, std::string_view("synthetic prototypes")));
  for (std::int64_t c = 0; c < classes_; ++c) {
    Tensor prototype(sample_shape_);
    for (float& value : prototype.values())
      value = static_cast<float>(rng.normal());
    prototypes_.push_back(std::move(prototype));
  }
}

void SyntheticSource::read_sample(std::int64_t index, std::span<float> values,
                                  std::span<int> labels) {
  Rng rng(derive_seed(seed_, static_cast<std::uint64_t>(index)));
  const auto label = static_cast<int>(rng.below(static_cast<std::uint64_t>(classes_)));
  const Tensor& prototype = prototypes_[static_cast<std::size_t>(label)];
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(prototype[static_cast<std::int64_t>(i)] + rng.normal());
  labels[0] = label;
}

SyntheticTokens::SyntheticTokens(std::uint64_t seed, std::int64_t size, Shape sample_shape,
                                 std::int64_t vocab_size, std::int64_t token_types,
                                 std::int64_t classes)
    : seed_(seed),
      size_(size),
      sample_shape_(std::move(sample_shape)),
      vocab_size_(vocab_size),
      token_types_(token_types),
      classes_(classes) {
  IPUSIM_CHECK(size_ > 0 && vocab_size_ > 0 && classes_ > 0 && !sample_shape_.empty() &&
               sample_shape_.size() <= 2 && (sample_shape_.size() == 1 || sample_shape_[0] <= 3));
}

void SyntheticTokens::read_sample(std::int64_t index, std::span<float> values,
                                  std::span<int> labels) {
  const std::int64_t s = sample_shape_.back();
  const std::int64_t rows = static_cast<std::int64_t>(values.size()) / s;
  Rng rng(derive_seed(derive_seed(seed_, std::string_view("synthetic tokens")),
                      static_cast<std::uint64_t>(index)));
  const auto length = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(s))) + 1;
  const auto split = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(length))) + 1;
  for (std::int64_t i = 0; i < s; ++i) {
    const bool token = i < length;
    const std::uint64_t id = rng.below(static_cast<std::uint64_t>(vocab_size_));
    values[static_cast<std::size_t>(i)] = token ? static_cast<float>(id) : 0.0f;
    if (rows >= 2)
      values[static_cast<std::size_t>(s + i)] = token_types_ >= 2 && i >= split ? 1.0f : 0.0f;
    if (rows >= 3)
      values[static_cast<std::size_t>(2 * s + i)] = token ? 1.0f : 0.0f;
  }
  labels[0] = static_cast<int>(static_cast<std::int64_t>(values[0]) % classes_);
}

MaskedTokens::MaskedTokens(std::uint64_t seed, std::int64_t size, Shape sample_shape,
                           std::int64_t vocab_size, std::int64_t token_types,
                           double mask_probability)
    : seed_(seed),
      size_(size),
      sample_shape_(std::move(sample_shape)),
      vocab_size_(vocab_size),
      token_types_(token_types),
      mask_probability_(mask_probability) {
  IPUSIM_CHECK(size_ > 0 && vocab_size_ >= 4 && mask_probability_ > 0.0 &&
               mask_probability_ <= 1.0 && !sample_shape_.empty() && sample_shape_.size() <= 2 &&
               (sample_shape_.size() == 1 || sample_shape_[0] <= 3));
}

void MaskedTokens::read_sample(std::int64_t index, std::span<float> values, std::span<int> labels) {
  const std::int64_t s = sample_shape_.back();
  const std::int64_t rows = static_cast<std::int64_t>(values.size()) / s;
  Rng rng(derive_seed(derive_seed(seed_, std::string_view("masked tokens")),
                      static_cast<std::uint64_t>(index)));
  const std::int64_t shortest = (s + 1) / 2;
  const auto length =
      shortest + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(s - shortest + 1)));
  const auto ids = static_cast<std::uint64_t>(vocab_size_ - 2);
  const std::uint64_t start = rng.below(ids);
  const std::uint64_t step = rng.below(3) + 1;
  std::fill(labels.begin(), labels.end(), -1);
  for (std::int64_t i = 0; i < length; ++i) {
    const auto id = static_cast<int>(1 + (start + static_cast<std::uint64_t>(i) * step) % ids);
    const bool masked = rng.uniform() < mask_probability_;
    values[static_cast<std::size_t>(i)] = static_cast<float>(masked ? vocab_size_ - 1 : id);
    labels[static_cast<std::size_t>(i)] = masked ? id : -1;
  }
  if (std::all_of(labels.begin(), labels.end(), [](int label) { return label < 0; })) {
    const auto i = static_cast<std::size_t>(rng.below(static_cast<std::uint64_t>(length)));
    labels[i] = static_cast<int>(values[i]);
    values[i] = static_cast<float>(vocab_size_ - 1);
  }
  for (std::int64_t i = length; i < s; ++i)
    values[static_cast<std::size_t>(i)] = 0.0f;
  for (std::int64_t i = 0; i < s && rows >= 2; ++i)
    values[static_cast<std::size_t>(s + i)] = token_types_ >= 2 && 2 * i >= length ? 1.0f : 0.0f;
  for (std::int64_t i = 0; i < s && rows >= 3; ++i)
    values[static_cast<std::size_t>(2 * s + i)] = i < length ? 1.0f : 0.0f;
}

NextTokens::NextTokens(std::uint64_t seed, std::int64_t size, Shape sample_shape,
                       std::int64_t vocab_size)
    : seed_(seed), size_(size), sample_shape_(std::move(sample_shape)), vocab_size_(vocab_size) {
  IPUSIM_CHECK(size_ > 0 && vocab_size_ >= 2 && sample_shape_.size() == 1);
}

void NextTokens::read_sample(std::int64_t index, std::span<float> values, std::span<int> labels) {
  const std::int64_t s = sample_shape_.back();
  Rng rng(derive_seed(derive_seed(seed_, std::string_view("next tokens")),
                      static_cast<std::uint64_t>(index)));
  const auto vocab = static_cast<std::uint64_t>(vocab_size_);
  const std::uint64_t start = rng.below(vocab);
  const std::uint64_t step = rng.below(3) + 1;
  const auto id = [&](std::int64_t j) {
    return static_cast<int>((start + static_cast<std::uint64_t>(j) * step) % vocab);
  };
  for (std::int64_t j = 0; j < s; ++j) {
    values[static_cast<std::size_t>(j)] = static_cast<float>(id(j));
    labels[static_cast<std::size_t>(j)] = id(j + 1);
  }
}

}  // namespace ipusim::models
