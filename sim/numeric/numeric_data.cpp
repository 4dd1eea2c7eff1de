// The data numeric runs read and whether numeric mode can run: Fashion-MNIST, the seeded
// synthetic set, or seeded token sequences with a class or masked-token labels.

#include <memory>
#include <string>

#include "models/layers/layer_types.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/numeric/training.hpp"

namespace ipusim::sim {
namespace {

constexpr std::int64_t kTrainingSamples = 60000;  // Fashion-MNIST's split, mirrored by synthetic
constexpr std::int64_t kTestSamples = 10000;

bool is_fashion_mnist(const DataSpec& data) {
  return data.source == "fashion-mnist";
}

// Opens Fashion-MNIST's split, reporting unusable files as a config error on the data path.
std::unique_ptr<models::DataSource> fashion_mnist(const RunSpec& spec,
                                                  models::FashionMnistSplit split) {
  if (spec.model.classes < 10) {
    throw core::ConfigError(spec.source_of("/data/source"), "/data/source",
                            "fashion-mnist has 10 classes but the model's loss has " +
                                std::to_string(spec.model.classes));
  }
  try {
    return std::make_unique<models::FashionMnist>(spec.data.path, split, spec.model.input_shape);
  } catch (const models::DataError& error) {
    throw core::ConfigError(spec.source_of("/data/path"), "/data/path", error.what());
  }
}

bool is_tokens(const DataSpec& data) {
  return data.source == "synthetic_tokens";
}

// The model's first embedding, which token data is drawn for; null when it has none.
const models::Layer* first_embedding(const models::Model& model) {
  for (const models::Layer& layer : model.layers) {
    if (layer.type == models::LayerType::kEmbedding)
      return &layer;
  }
  return nullptr;
}

std::unique_ptr<models::DataSource> synthetic(const RunSpec& spec, std::int64_t size) {
  const models::Model& model = spec.model;
  if (is_tokens(spec.data) && spec.data.labels == "masked_tokens") {
    const models::LayerParams& p = first_embedding(model)->params;
    return std::make_unique<models::MaskedTokens>(spec.data.seed, size, model.input_shape,
                                                  p.vocab_size, p.token_types,
                                                  spec.data.mask_probability);
  }
  if (is_tokens(spec.data) && spec.data.labels == "next_token") {
    const models::LayerParams& p = first_embedding(model)->params;
    return std::make_unique<models::NextTokens>(spec.data.seed, size, model.input_shape,
                                                p.vocab_size);
  }
  if (is_tokens(spec.data)) {
    const models::LayerParams& p = first_embedding(model)->params;
    return std::make_unique<models::SyntheticTokens>(spec.data.seed, size, model.input_shape,
                                                     p.vocab_size, p.token_types, model.classes);
  }
  return std::make_unique<models::SyntheticSource>(spec.data.seed, size, model.input_shape,
                                                   model.classes);
}

// Why the data cannot feed the model numerically (empty when it can): token data for a model
// with an embedding, one label per sample for the loss.
std::string data_mismatch(const RunSpec& spec) {
  const models::Model& model = spec.model;
  const models::Layer* embedding = first_embedding(model);
  const models::Shape& input = model.input_shape;
  if (embedding != nullptr && !is_tokens(spec.data)) {
    return "layer '" + embedding->id + "' (embedding) reads token ids, which the \"" +
           spec.data.source + "\" data do not hold; use \"synthetic_tokens\"";
  }
  if (spec.data.eight_bit_io && spec.data.source != "fashion-mnist") {
    return "eight_bit_io sends 8-bit pixels, which the \"" + spec.data.source +
           "\" data do not hold; use \"fashion-mnist\"";
  }
  if (is_tokens(spec.data) && embedding == nullptr)
    return "synthetic_tokens draws token ids for an embedding, but the model has none";
  if (is_tokens(spec.data) && (input.size() > 2 || (input.size() == 2 && input[0] > 3))) {
    return "synthetic_tokens fills a model input of [sequence] or [rows, sequence] with up to 3 "
           "rows (ids, types, mask), not " +
           models::shape_text(input);
  }
  if (spec.data.labels == "next_token" && input.size() != 1) {
    return "next-token labels follow one sequence of token ids, a model input of [sequence], "
           "not " +
           models::shape_text(input);
  }
  if (spec.data.labels == "next_token" && model.classes < embedding->params.vocab_size) {
    return "next tokens are labelled with their ids, up to " +
           std::to_string(embedding->params.vocab_size - 1) + ", but the loss has " +
           std::to_string(model.classes) + " classes";
  }
  if (spec.data.labels == "masked_tokens" && model.classes < embedding->params.vocab_size - 1) {
    return "masked tokens are labelled with their ids, up to " +
           std::to_string(embedding->params.vocab_size - 2) + ", but the loss has " +
           std::to_string(model.classes) + " classes";
  }
  return "";
}

// The rows of logits per sample the loss takes.
std::int64_t logit_rows_per_sample(const models::Model& model) {
  const int loss = static_cast<int>(model.layers.size()) - 1;
  const models::Shape logits = models::input_shapes_of(model, loss).front();
  return models::element_count(logits) / logits.back();
}

// Why the loss cannot take the data's labels (empty when it can): a class per sample, or with
// masked tokens one label per token.
std::string label_mismatch(const RunSpec& spec) {
  const std::int64_t rows = logit_rows_per_sample(spec.model);
  const bool per_token = is_tokens(spec.data) && spec.data.labels != "class";
  const std::int64_t labels = per_token ? spec.model.input_shape.back() : 1;
  if (rows == labels)
    return "";
  const std::string loss = "the loss '" + spec.model.layers.back().id + "' takes " +
                           std::to_string(rows) + " rows of logits per sample";
  if (!per_token)
    return "numeric data give one label per sample, but " + loss;
  return "\"" + spec.data.labels + "\" data give one label per token, " + std::to_string(labels) +
         " per sample, but " + loss;
}

}  // namespace

NumericSupport numeric_support(const RunSpec& spec) {
  if (!spec.model.trainable) {
    return {false, spec.source_of("/model/layers"), "/model/layers",
            "numeric mode compares losses, but the model has no softmax_cross_entropy loss"};
  }
  if (spec.pipeline.replication_factor > 1) {
    return {false, spec.source_of("/pipeline/replication_factor"), "/pipeline/replication_factor",
            "numeric mode runs one replica, but replication_factor is " +
                std::to_string(spec.pipeline.replication_factor)};
  }
  // Rounding the stash would part the pipelined run from its one-device reference, which keeps
  // no stash, so the bit-identity check could not hold.
  const auto& p = spec.pipeline;
  if (models::dtype_bytes(p.stash_dtype) < models::dtype_bytes(p.dtype)) {
    return {false, spec.source_of("/pipeline/stash_dtype"), "/pipeline/stash_dtype",
            "numeric mode keeps the stash in the compute dtype (" + models::dtype_name(p.dtype) +
                ") and does not round it to " + models::dtype_name(p.stash_dtype) +
                ": stash_dtype " + models::dtype_name(p.stash_dtype) +
                " is priced (memory, casts) but not computed"};
  }
  const models::Layer& loss = spec.model.layers.back();
  if (const std::string mismatch = label_mismatch(spec); !mismatch.empty())
    return {false, loss.file.empty() ? spec.config_path : loss.file, loss.pointer, mismatch};
  if (const std::string mismatch = data_mismatch(spec); !mismatch.empty())
    return {false, spec.source_of("/data/source"), "/data/source", mismatch};
  return {true, "", "", ""};
}

void throw_unsupported(const NumericSupport& support) {
  throw core::ConfigError(support.file, support.pointer, support.reason);
}

std::unique_ptr<models::DataSource> training_data(const RunSpec& spec) {
  auto source = is_fashion_mnist(spec.data) ? fashion_mnist(spec, models::FashionMnistSplit::kTrain)
                                            : synthetic(spec, kTrainingSamples);
  if (spec.data.shuffle)
    source->shuffle_each_epoch(spec.data.seed);
  return source;
}

TestSet test_data(const RunSpec& spec) {
  if (is_fashion_mnist(spec.data)) {
    auto source = fashion_mnist(spec, models::FashionMnistSplit::kTest);
    const std::int64_t count = source->size();
    return {std::move(source), 0, count};
  }
  return {synthetic(spec, kTrainingSamples + kTestSamples), kTrainingSamples, kTestSamples};
}

std::string data_description(const DataSpec& data) {
  if (is_fashion_mnist(data))
    return "fashion-mnist (" + data.path + ")";
  if (is_tokens(data) && data.labels == "next_token")
    return "synthetic_tokens with next-token labels (seed " + std::to_string(data.seed) + ")";
  if (is_tokens(data) && data.labels == "masked_tokens") {
    return "synthetic_tokens with masked-token labels (seed " + std::to_string(data.seed) +
           ", mask probability " + fixed(data.mask_probability, 2) + ")";
  }
  return (is_tokens(data) ? "synthetic_tokens (seed " : "synthetic (seed ") +
         std::to_string(data.seed) + ")";
}
}  // namespace ipusim::sim
