#pragma once
// The factories of the kernels (models/kernels/kernels_*.cpp), which each layer type's row
// names (models/layers/types/). Kept apart from kernels_internal.hpp so that the type files do
// not compile Eigen.

#include <cstdint>
#include <memory>
#include <vector>

#include "models/layers/dtype.hpp"
#include "models/layers/layer.hpp"

namespace ipusim::models {
class Kernel;
}  // namespace ipusim::models

namespace ipusim::models::detail {

std::unique_ptr<Kernel> make_dense(const Layer& layer, const std::vector<Shape>& inputs,
                                   DType dtype);
std::unique_ptr<Kernel> make_conv2d(const Layer& layer, const std::vector<Shape>& inputs,
                                    DType dtype);
std::unique_ptr<Kernel> make_maxpool2d(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype);
std::unique_ptr<Kernel> make_avgpool2d(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype);
std::unique_ptr<Kernel> make_global_average_pool2d(const std::vector<Shape>& inputs, DType dtype);
std::unique_ptr<Kernel> make_relu(const std::vector<Shape>& inputs, DType dtype);
// `form`: kGelu (exact) or kGeluTanh.
std::unique_ptr<Kernel> make_gelu(const std::vector<Shape>& inputs, DType dtype, Activation form);
std::unique_ptr<Kernel> make_dropout(const Layer& layer, const std::vector<Shape>& inputs,
                                     DType dtype, std::uint64_t seed);
std::unique_ptr<Kernel> make_add(const std::vector<Shape>& inputs, DType dtype);
std::unique_ptr<Kernel> make_slice(const Layer& layer, const std::vector<Shape>& inputs,
                                   DType dtype);
std::unique_ptr<Kernel> make_concat(const Layer& layer, const std::vector<Shape>& inputs,
                                    DType dtype);
std::unique_ptr<Kernel> make_flatten(const std::vector<Shape>& inputs, DType dtype);
std::unique_ptr<Kernel> make_reshape(const Layer& layer, const std::vector<Shape>& inputs,
                                     DType dtype);
std::unique_ptr<Kernel> make_softmax_cross_entropy(const std::vector<Shape>& inputs, DType dtype);
std::unique_ptr<Kernel> make_tanh(const std::vector<Shape>& inputs, DType dtype);
std::unique_ptr<Kernel> make_softmax(const std::vector<Shape>& inputs, DType dtype);
std::unique_ptr<Kernel> make_layer_norm(const Layer& layer, const std::vector<Shape>& inputs,
                                        DType dtype);
std::unique_ptr<Kernel> make_batch_norm(const Layer& layer, const std::vector<Shape>& inputs,
                                        DType dtype);
std::unique_ptr<Kernel> make_attention(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype, std::uint64_t seed);
std::unique_ptr<Kernel> make_embedding(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype);
std::unique_ptr<Kernel> make_position_table(const std::vector<Shape>& inputs, DType dtype);
std::unique_ptr<Kernel> make_class_token(const std::vector<Shape>& inputs, DType dtype);
std::unique_ptr<Kernel> make_token_mean(const std::vector<Shape>& inputs, DType dtype);
std::unique_ptr<Kernel> make_token_select(const Layer& layer, const std::vector<Shape>& inputs,
                                          DType dtype);
// transformer_encoder and its halves, transformer_attention and transformer_feed_forward.
std::unique_ptr<Kernel> make_transformer(const Layer& layer, const std::vector<Shape>& inputs,
                                         DType dtype, std::uint64_t seed);

}  // namespace ipusim::models::detail
