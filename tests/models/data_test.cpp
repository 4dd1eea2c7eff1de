#include "models/data/data.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>

#include <catch2/catch.hpp>

#include "tests/test_support.hpp"

using namespace ipusim::models;
using ipusim::testing::error_of;

namespace {

// A fresh directory under the build tree for the files a test writes.
std::string scratch_directory(const std::string& name) {
  const auto path = std::filesystem::path(IPUSIM_BINARY_DIR) / "kernels_tests_data" / name;
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path.string();
}

void write_gzip(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  REQUIRE(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  gzclose(file);
}

void append_u32(std::vector<std::uint8_t>& bytes, std::uint32_t value) {
  for (const int shift : {24, 16, 8, 0})
    bytes.push_back(static_cast<std::uint8_t>(value >> shift));
}

std::vector<std::uint8_t> idx_images(std::uint32_t magic, std::uint32_t count, std::uint32_t rows,
                                     std::uint32_t cols, std::size_t payload_bytes) {
  std::vector<std::uint8_t> bytes;
  for (const std::uint32_t value : {magic, count, rows, cols})
    append_u32(bytes, value);
  for (std::size_t i = 0; i < payload_bytes; ++i)
    bytes.push_back(static_cast<std::uint8_t>(i % 256));
  return bytes;
}

std::vector<std::uint8_t> idx_labels(const std::vector<std::uint8_t>& labels) {
  std::vector<std::uint8_t> bytes;
  append_u32(bytes, 0x00000801);
  append_u32(bytes, static_cast<std::uint32_t>(labels.size()));
  bytes.insert(bytes.end(), labels.begin(), labels.end());
  return bytes;
}

// A 2x2 "Fashion-MNIST" of `count` images whose first pixel is the image index.
std::string tiny_dataset(const std::string& name, std::uint32_t count) {
  const std::string directory = scratch_directory(name);
  std::vector<std::uint8_t> images = idx_images(0x00000803, count, 2, 2, 0);
  std::vector<std::uint8_t> labels;
  for (std::uint32_t i = 0; i < count; ++i) {
    images.insert(images.end(), {static_cast<std::uint8_t>(i), 51, 0, 255});
    labels.push_back(static_cast<std::uint8_t>(i % 10));
  }
  write_gzip(directory + "/train-images-idx3-ubyte.gz", images);
  write_gzip(directory + "/train-labels-idx1-ubyte.gz", idx_labels(labels));
  return directory;
}

// Which dataset sample each stream index maps to, read back from the first pixel.
std::vector<int> first_pixels(DataSource& source, std::int64_t first, std::int64_t count) {
  Tensor inputs;
  std::vector<int> labels;
  source.batch(first, count, inputs, labels);
  std::vector<int> pixels;
  for (std::int64_t i = 0; i < count; ++i)
    pixels.push_back(static_cast<int>(std::lround(inputs[i * 4] * 255.0f)));
  return pixels;
}

}  // namespace

TEST_CASE("IDX images and labels are read from gzip files and scaled to the unit interval") {
  const std::string directory = tiny_dataset("valid", 3);
  FashionMnist data(directory, FashionMnistSplit::kTrain, {2, 2, 1});
  CHECK(data.size() == 3);
  CHECK(data.classes() == 10);
  Tensor inputs;
  std::vector<int> labels;
  data.batch(1, 2, inputs, labels);
  CHECK(inputs.shape() == Shape{2, 2, 2, 1});
  CHECK(labels == std::vector<int>{1, 2});
  CHECK(inputs[0] == 1.0f / 255.0f);
  CHECK(inputs[1] == 0.2f);
  CHECK(inputs[2] == 0.0f);
  CHECK(inputs[3] == 1.0f);
}

TEST_CASE("a missing IDX file is reported with its path") {
  const std::string path = scratch_directory("missing") + "/train-images-idx3-ubyte.gz";
  CHECK(error_of<DataError>([&] { read_idx_images(path); }) == path + ": file not found");
}

TEST_CASE("an IDX file with a bad magic number is reported with both numbers") {
  const std::string path = scratch_directory("magic") + "/images.gz";
  write_gzip(path, idx_images(0x00000804, 1, 2, 2, 4));
  CHECK(error_of<DataError>([&] { read_idx_images(path); }) ==
        path + ": bad magic number 0x00000804, expected 0x00000803 (IDX unsigned-byte images)");
  CHECK(error_of<DataError>([&] { read_idx_labels(path); }) ==
        path + ": bad magic number 0x00000804, expected 0x00000801 (IDX unsigned-byte labels)");
}

TEST_CASE("a truncated IDX file says how many bytes it expected and found") {
  const std::string directory = scratch_directory("truncated");
  write_gzip(directory + "/images.gz", idx_images(0x00000803, 60000, 28, 28, 1000));
  CHECK(error_of<DataError>([&] { read_idx_images(directory + "/images.gz"); }) ==
        directory + "/images.gz: expected 47040000 bytes of image data, found 1000");
  write_gzip(directory + "/header.gz", {0, 0, 8, 3, 0, 0});
  CHECK(error_of<DataError>([&] { read_idx_images(directory + "/header.gz"); }) ==
        directory + "/header.gz: expected a 16-byte header, found 6");
  std::vector<std::uint8_t> labels = idx_labels({1, 2, 3});
  labels.pop_back();
  write_gzip(directory + "/labels.gz", labels);
  CHECK(error_of<DataError>([&] { read_idx_labels(directory + "/labels.gz"); }) ==
        directory + "/labels.gz: expected 3 bytes of label data, found 2");
}

TEST_CASE("a model input whose element count is not the image size is refused") {
  const std::string directory = tiny_dataset("shape", 3);
  CHECK(error_of<DataError>([&] {
          FashionMnist(directory, FashionMnistSplit::kTrain, {2, 2, 3});
        }) ==
        directory +
            "/train-images-idx3-ubyte.gz: a model input of shape [2, 2, 3] has 12 elements, but "
            "the images have 4");
}

TEST_CASE("images and labels of different counts are refused") {
  const std::string directory = tiny_dataset("counts", 3);
  write_gzip(directory + "/train-labels-idx1-ubyte.gz", idx_labels({1, 2}));
  CHECK(error_of<DataError>([&] { FashionMnist(directory, FashionMnistSplit::kTrain, {4}); }) ==
        directory + "/train-labels-idx1-ubyte.gz: holds 2 labels for 3 images");
}

TEST_CASE("the stream wraps around the dataset, epoch after epoch") {
  FashionMnist data(tiny_dataset("wrap", 5), FashionMnistSplit::kTrain, {4});
  CHECK(first_pixels(data, 3, 5) == std::vector<int>{3, 4, 0, 1, 2});
}

TEST_CASE("shuffling visits every sample once per epoch in a seeded order") {
  FashionMnist data(tiny_dataset("shuffle", 20), FashionMnistSplit::kTrain, {4});
  data.shuffle_each_epoch(5);
  const std::vector<int> epoch0 = first_pixels(data, 0, 20);
  const std::vector<int> epoch1 = first_pixels(data, 20, 20);
  CHECK(std::set<int>(epoch0.begin(), epoch0.end()).size() == 20);
  CHECK(std::set<int>(epoch1.begin(), epoch1.end()).size() == 20);
  CHECK(epoch0 != epoch1);
  std::vector<int> sorted = epoch0;
  std::sort(sorted.begin(), sorted.end());
  CHECK(epoch0 != sorted);
  FashionMnist again(tiny_dataset("shuffle_again", 20), FashionMnistSplit::kTrain, {4});
  again.shuffle_each_epoch(5);
  CHECK(first_pixels(again, 20, 20) == epoch1);  // any epoch can be replayed directly
  CHECK(first_pixels(again, 7, 3) == std::vector<int>(epoch0.begin() + 7, epoch0.begin() + 10));
}

TEST_CASE("the installed Fashion-MNIST test split loads with its known first labels") {
  FashionMnist data("/usr/share/datasets/fashion-mnist", FashionMnistSplit::kTest, {28, 28, 1});
  CHECK(data.size() == 10000);
  Tensor inputs;
  std::vector<int> labels;
  data.batch(0, 4, inputs, labels);
  CHECK(labels == std::vector<int>{9, 2, 1, 1});
  CHECK(inputs[14 * 28 + 14] == 110.0f / 255.0f);
}

TEST_CASE("a synthetic source gives each sample from (seed, index) alone") {
  SyntheticSource data(3, 100, {4, 4, 2}, 5);
  CHECK(data.size() == 100);
  Tensor whole;
  std::vector<int> whole_labels;
  data.batch(10, 8, whole, whole_labels);
  CHECK(whole.shape() == Shape{8, 4, 4, 2});
  Tensor part;
  std::vector<int> part_labels;
  data.batch(14, 2, part, part_labels);
  CHECK(part_labels == std::vector<int>(whole_labels.begin() + 4, whole_labels.begin() + 6));
  CHECK(std::equal(part.values().begin(), part.values().end(), whole.values().begin() + 4 * 32));
  CHECK(std::all_of(whole_labels.begin(), whole_labels.end(),
                    [](int label) { return label >= 0 && label < 5; }));
  SyntheticSource other(4, 100, {4, 4, 2}, 5);
  other.batch(10, 8, part, part_labels);
  CHECK_FALSE(std::equal(part.values().begin(), part.values().end(), whole.values().begin()));
}

TEST_CASE("masked tokens label each masked position with the id its progression gives") {
  // Vocabulary 20: ids 1..18 in a progression mod 18, [MASK] = 19, padding 0.
  MaskedTokens data(7, 1000, {3, 12}, 20, 2, 0.25);
  CHECK(data.classes() == 20);
  CHECK(data.labels_per_sample() == 12);
  Tensor inputs;
  std::vector<int> labels;
  data.batch(0, 1000, inputs, labels);
  REQUIRE(labels.size() == 12'000);
  std::int64_t masked = 0;
  std::int64_t tokens = 0;
  for (std::int64_t i = 0; i < 1000; ++i) {
    const float* ids = inputs.data() + i * 36;
    const int* row = labels.data() + i * 12;
    std::int64_t length = 0;
    while (length < 12 && ids[2 * 12 + length] == 1.0f)
      ++length;
    REQUIRE(length >= 6);
    std::vector<int> original(12, 0);
    for (std::int64_t j = 0; j < length; ++j)
      original[std::size_t(j)] = row[j] >= 0 ? row[j] : int(ids[j]);
    const int step = (original[1] - original[0] + 18) % 18;
    CHECK((step >= 1 && step <= 3));
    for (std::int64_t j = 0; j < 12; ++j) {
      if (j >= length) {
        CHECK(ids[j] == 0.0f);
        CHECK(row[j] == -1);
        continue;
      }
      CHECK(original[std::size_t(j)] == 1 + (original[0] - 1 + int(j) * step) % 18);
      CHECK((row[j] < 0) == (ids[j] != 19.0f));
      CHECK(ids[12 + j] == (2 * j >= length ? 1.0f : 0.0f));
      masked += row[j] >= 0 ? 1 : 0;
    }
    tokens += length;
    CHECK(std::any_of(row, row + 12, [](int label) { return label >= 0; }));
  }
  // A quarter of the tokens, within four standard deviations of the binomial (plus the forced
  // ones, at most one per sample with no draw).
  const double expected = 0.25 * double(tokens);
  const double sd = std::sqrt(expected * 0.75);
  CHECK(double(masked) > expected - 4 * sd);
  CHECK(double(masked) < expected + 4 * sd + 1000 * std::pow(0.75, 6));
}

TEST_CASE("next tokens label every position with the id after it in its progression") {
  // Vocabulary 11: s + 1 = 9 ids (a + j·d) mod 11 with d in 1..3; the sample holds ids 0..7 and
  // position j's label is id j + 1, so the last label is the one id the sample does not hold.
  NextTokens data(5, 500, {8}, 11);
  CHECK(data.classes() == 11);
  CHECK(data.labels_per_sample() == 8);
  Tensor inputs;
  std::vector<int> labels;
  data.batch(0, 500, inputs, labels);
  REQUIRE(labels.size() == 4'000);
  std::array<int, 4> steps{};
  for (std::int64_t i = 0; i < 500; ++i) {
    const float* ids = inputs.data() + i * 8;
    const int* row = labels.data() + i * 8;
    const int first = int(ids[0]);
    const int step = (int(ids[1]) - first + 11) % 11;
    REQUIRE((step >= 1 && step <= 3));
    ++steps[std::size_t(step)];
    for (int j = 0; j < 8; ++j) {
      CHECK(ids[j] == float((first + j * step) % 11));
      CHECK(row[j] == (first + (j + 1) * step) % 11);
    }
  }
  // Each step about a third of the time: within four standard deviations of 500/3.
  for (int step = 1; step <= 3; ++step)
    CHECK(std::abs(steps[std::size_t(step)] - 500.0 / 3) < 4 * std::sqrt(500 * 2.0 / 9));
  Tensor again;
  std::vector<int> again_labels;
  NextTokens(5, 500, {8}, 11).batch(17, 1, again, again_labels);
  CHECK(std::equal(again.values().begin(), again.values().end(), inputs.data() + 17 * 8));
}
