#pragma once
// Training data for numeric runs: Fashion-MNIST from its IDX files, a seeded synthetic set
// of any input shape, or seeded synthetic token sequences for models with an embedding. Both sit
// behind DataSource, which serves consecutive samples of an endless stream: sample i is sample (i
// mod size) of epoch (i / size), optionally in a seeded per-epoch shuffled order, so a run can be
// replayed from any index.

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/kernels/tensor.hpp"
#include "models/layers/layer.hpp"

namespace ipusim::models {

// A data or array file that cannot be used: what() is "<path>: <problem>".
class DataError : public std::runtime_error {
 public:
  DataError(std::string path, std::string problem);
  const std::string& path() const { return path_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string path_;
  std::string problem_;
};

// Throws DataError unless `path` is a regular file: "file not found", or what it is instead.
void check_regular_file(const std::string& path);

// An endless stream of labelled samples of one shape (see the top of this file).
class DataSource {
 public:
  virtual ~DataSource() = default;

  virtual std::int64_t size() const = 0;
  virtual const Shape& sample_shape() const = 0;
  virtual std::int64_t classes() const = 0;
  // Labels per sample: 1 for a class per sample, the sequence length for masked tokens.
  virtual std::int64_t labels_per_sample() const { return 1; }

  // From now on, each epoch visits the samples in a permutation keyed by (seed, epoch).
  void shuffle_each_epoch(std::uint64_t seed);

  // Fills `inputs` (shape [count, sample_shape...]) and `labels` (count x labels_per_sample())
  // with stream samples first_index .. first_index + count - 1. A label below 0 is no target.
  void batch(std::int64_t first_index, std::int64_t count, Tensor& inputs,
             std::vector<int>& labels);

 protected:
  // Writes sample `index` (< size()) into `values` and its labels into `labels`.
  virtual void read_sample(std::int64_t index, std::span<float> values, std::span<int> labels) = 0;

 private:
  std::int64_t dataset_index(std::int64_t stream_index);

  std::optional<std::uint64_t> shuffle_seed_;
  std::int64_t permutation_epoch_ = -1;
  std::vector<std::int64_t> permutation_;
};

// The contents of an IDX file of unsigned-byte images (magic 0x00000803).
struct IdxImages {
  std::int64_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::uint8_t> pixels;  // count x rows x cols, row-major
};

// Read gzip-compressed (or plain) IDX files; throw DataError naming the file and the problem.
IdxImages read_idx_images(const std::string& path);
std::vector<std::uint8_t> read_idx_labels(const std::string& path);

enum class FashionMnistSplit { kTrain, kTest };

// The images and labels files of a split in `directory`, as the Debian package names them.
struct FashionMnistFiles {
  std::string images;
  std::string labels;
};
FashionMnistFiles fashion_mnist_files(const std::string& directory, FashionMnistSplit split);

// Fashion-MNIST as the Keras tutorials feed it: pixels / 255 as float32, integer labels. The
// sample shape is the model's input shape (28x28, 28x28x1, 784...): any with 784 elements.
class FashionMnist final : public DataSource {
 public:
  FashionMnist(const std::string& directory, FashionMnistSplit split, Shape sample_shape);

  std::int64_t size() const override { return static_cast<std::int64_t>(labels_.size()); }
  const Shape& sample_shape() const override { return sample_shape_; }
  std::int64_t classes() const override { return 10; }

 protected:
  void read_sample(std::int64_t index, std::span<float> values, std::span<int> labels) override;

 private:
  IdxImages images_;
  std::vector<std::uint8_t> labels_;
  Shape sample_shape_;
};

// A seeded, learnable synthetic set: every class has a fixed random prototype (standard normal
// per element) and a sample is its class prototype plus standard normal noise. Sample i depends
// only on (seed, i).
class SyntheticSource final : public DataSource {
 public:
  SyntheticSource(std::uint64_t seed, std::int64_t size, Shape sample_shape, std::int64_t classes);

  std::int64_t size() const override { return size_; }
  const Shape& sample_shape() const override { return sample_shape_; }
  std::int64_t classes() const override { return classes_; }

 protected:
  void read_sample(std::int64_t index, std::span<float> values, std::span<int> labels) override;

 private:
  std::uint64_t seed_;
  std::int64_t size_;
  Shape sample_shape_;
  std::int64_t classes_;
  std::vector<Tensor> prototypes_;
};

// Seeded token sequences for models with an embedding. The sample shape is [s] (token ids) or
// [k, s], whose rows are the token ids, then (k >= 2) the token types, then (k >= 3) a padding
// mask. Sample i depends only on (seed, i): a length L uniform in 1..s; ids uniform in
// [0, vocab_size) up to L and 0 (padding) after; types 0 before a split uniform in 1..L and
// 1 from it (all 0 with fewer than two token types); the mask 1 up to L and 0 after. The label
// is the id of the first token modulo the class count.
class SyntheticTokens final : public DataSource {
 public:
  SyntheticTokens(std::uint64_t seed, std::int64_t size, Shape sample_shape,
                  std::int64_t vocab_size, std::int64_t token_types, std::int64_t classes);

  std::int64_t size() const override { return size_; }
  const Shape& sample_shape() const override { return sample_shape_; }
  std::int64_t classes() const override { return classes_; }

 protected:
  void read_sample(std::int64_t index, std::span<float> values, std::span<int> labels) override;

 private:
  std::uint64_t seed_;
  std::int64_t size_;
  Shape sample_shape_;
  std::int64_t vocab_size_;
  std::int64_t token_types_;
  std::int64_t classes_;
};

// Seeded token sequences for masked-language modelling, as BERT pre-trains: the sample shape is
// [s] or [k, s] as for SyntheticTokens, with one label per position. Sample i depends only on
// (seed, i): a length L uniform in ceil(s/2)..s; ids follow a progression, id_j = 1 + (a + j·d)
// mod (vocab_size - 2) with a uniform in [0, vocab_size - 2) and d uniform in 1..3, so that a
// masked id follows from its neighbours; padding (id 0) after L. Each token is masked with
// `mask_probability` (one uniform position if none is): its id becomes vocab_size - 1 ([MASK])
// and its label the original id. Every other position's label is -1, no target. Types are 0 in
// the first half of the tokens and 1 after (with two token types); the mask is 1 up to L.
class MaskedTokens final : public DataSource {
 public:
  MaskedTokens(std::uint64_t seed, std::int64_t size, Shape sample_shape, std::int64_t vocab_size,
               std::int64_t token_types, double mask_probability);

  std::int64_t size() const override { return size_; }
  const Shape& sample_shape() const override { return sample_shape_; }
  std::int64_t classes() const override { return vocab_size_; }
  std::int64_t labels_per_sample() const override { return sample_shape_.back(); }

 protected:
  void read_sample(std::int64_t index, std::span<float> values, std::span<int> labels) override;

 private:
  std::uint64_t seed_;
  std::int64_t size_;
  Shape sample_shape_;
  std::int64_t vocab_size_;
  std::int64_t token_types_;
  double mask_probability_;
};

// Seeded token sequences for a causal language model, as GPT-2 trains: the sample shape is
// [s], every position a token, and one label per position, the token after it. Sample i depends
// only on (seed, i): s + 1 ids follow a progression, id_j = (a + j·d) mod vocab_size with a
// uniform in [0, vocab_size) and d uniform in 1..3, so that a next id follows from the ones
// before; the sample holds ids 0..s-1 and the label of position j is id_{j+1}.
class NextTokens final : public DataSource {
 public:
  NextTokens(std::uint64_t seed, std::int64_t size, Shape sample_shape, std::int64_t vocab_size);

  std::int64_t size() const override { return size_; }
  const Shape& sample_shape() const override { return sample_shape_; }
  std::int64_t classes() const override { return vocab_size_; }
  std::int64_t labels_per_sample() const override { return sample_shape_.back(); }

 protected:
  void read_sample(std::int64_t index, std::span<float> values, std::span<int> labels) override;

 private:
  std::uint64_t seed_;
  std::int64_t size_;
  Shape sample_shape_;
  std::int64_t vocab_size_;
};

}  // namespace ipusim::models
