#!/usr/bin/python3
"""ipusim import of ONNX models built here with python3-onnx's helper API, never downloaded:
an MLP (PyTorch-style Gemm with transB), a CNN (Conv with 'same' and no padding, MaxPool,
Flatten of channels-first features, MatMul + Add), branches joined and added back then
GlobalAveragePool, a transformer and a graph with an unsupported operator.
Each imported config has the file's parameter count, and its first training step through the
simulated pipeline starts from the file's weights: the loss ipusim saves equals the loss numpy
computes from the same weights on the same samples.

    tests/models/onnx/onnx_import_test.py IPUSIM
"""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IPUSIM = os.path.abspath(sys.argv[1])
RNG = np.random.default_rng(7)
MICRO_BATCH = 4


def weight(name, *shape):
    scale = 1.0 / np.sqrt(np.prod(shape[1:]) if len(shape) > 1 else shape[0])
    return numpy_helper.from_array(
        (RNG.standard_normal(shape) * scale).astype(np.float32), name)


def save(graph, path, opset=13):
    model = helper.make_model(graph, producer_name="onnx.helper",
                              opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return {t.name: numpy_helper.to_array(t) for t in graph.initializer}


def mlp(path):
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1", transB=1),
        helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
        helper.make_node("Gemm", ["a1", "w2", "b2"], ["logits"], name="fc2", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "onnx_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 784])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])],
        [weight("w1", 64, 784), weight("b1", 64), weight("w2", 10, 64), weight("b2", 10)])
    return save(graph, path)


def cnn(path):
    nodes = [
        helper.make_node("Conv", ["x", "k1", "c1"], ["y1"], name="conv1", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["y1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p1", "k2", "c2"], ["y2"], name="conv2", kernel_shape=[3, 3]),
        helper.make_node("Relu", ["y2"], ["r2"], name="relu2"),
        helper.make_node("Flatten", ["r2"], ["f"], name="flatten", axis=1),
        helper.make_node("MatMul", ["f", "w3"], ["m3"], name="fc3"),
        helper.make_node("Add", ["m3", "b3"], ["h3"], name="fc3_bias"),
        helper.make_node("Tanh", ["h3"], ["t3"], name="tanh3"),
        helper.make_node("Gemm", ["t3", "w4", "b4"], ["logits"], name="fc4"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "onnx_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])],
        [weight("k1", 4, 1, 3, 3), weight("c1", 4), weight("k2", 6, 4, 3, 3), weight("c2", 6),
         weight("w3", 12 * 12 * 6, 32), weight("b3", 32), weight("w4", 32, 10),
         weight("b4", 10)])
    return save(graph, path)


def branches(path):
    """Two convolution branches (one batch-normalised, one without bias) concatenated on
    channels, pooled, then a residual convolution added back and a global average pool."""
    nodes = [
        helper.make_node("Conv", ["x", "ka", "ca"], ["ya"], name="conv_a", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["ya", "bn_g", "bn_b", "bn_mean", "bn_var"],
                         ["na"], name="norm_a", epsilon=1e-3),
        helper.make_node("Relu", ["na"], ["ra"], name="relu_a"),
        helper.make_node("Conv", ["x", "kb"], ["yb"], name="conv_b", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Concat", ["ra", "yb"], ["joined"], name="join", axis=1),
        helper.make_node("MaxPool", ["joined"], ["pooled"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["pooled", "kc", "cc"], ["yc"], name="conv_c",
                         pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Add", ["pooled", "yc"], ["residual"], name="residual"),
        helper.make_node("GlobalAveragePool", ["residual"], ["averaged"], name="average"),
        helper.make_node("Flatten", ["averaged"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "w", "b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    statistics = [numpy_helper.from_array((0.1 * RNG.standard_normal(4)).astype(np.float32),
                                          "bn_mean"),
                  numpy_helper.from_array((1 + RNG.random(4)).astype(np.float32), "bn_var")]
    graph = helper.make_graph(
        nodes, "onnx_branches",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])],
        [weight("ka", 4, 1, 3, 3), weight("ca", 4), weight("bn_g", 4), weight("bn_b", 4),
         weight("kb", 2, 1, 3, 3), weight("kc", 6, 6, 3, 3), weight("cc", 6),
         weight("w", 10, 6), weight("b", 10)] + statistics)
    return save(graph, path)


def constant(name, value, dtype=np.float32):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.array(value, dtype=dtype), name))


SEQUENCE, VOCAB, HIDDEN, HEADS, FFN = 8, 16, 8, 2, 16


def attention_nodes(p, x, out, layer, mask=False):
    """Self-attention as exporters write it. Layer 0 scales with Div and transposes K at once;
    layer 1 scales with Mul by a Constant and transposes K in two steps (PyTorch's k.transpose)."""
    d = HIDDEN // HEADS
    nodes = [constant(p + "heads_shape", [0, SEQUENCE, HEADS, d], np.int64),
             constant(p + "merged_shape", [0, SEQUENCE, HIDDEN], np.int64)]
    for name in "qkv":
        perm = [0, 2, 3, 1] if name == "k" and layer == 0 else [0, 2, 1, 3]
        nodes += [
            helper.make_node("MatMul", [x, p + "w" + name], [p + name + "_mm"], name=p + name),
            helper.make_node("Add", [p + name + "_mm", p + "b" + name], [p + name + "_b"],
                             name=p + name + "_bias"),
            helper.make_node("Reshape", [p + name + "_b", p + "heads_shape"], [p + name + "_4"],
                             name=p + name + "_split"),
            helper.make_node("Transpose", [p + name + "_4"], [p + name + "_h"],
                             name=p + name + "_heads", perm=perm)]
    if layer == 0:
        key = p + "k_h"
        scale = [constant(p + "root_d", np.sqrt(d)),
                 helper.make_node("Div", [p + "scores", p + "root_d"], [p + "scaled"],
                                  name=p + "scale")]
    else:
        key = p + "k_t"
        nodes.append(helper.make_node("Transpose", [p + "k_h"], [key], name=p + "k_transpose",
                                      perm=[0, 1, 3, 2]))
        scale = [constant(p + "inverse_root_d", 1 / np.sqrt(d)),
                 helper.make_node("Mul", [p + "scores", p + "inverse_root_d"], [p + "scaled"],
                                  name=p + "scale")]
    nodes += [helper.make_node("MatMul", [p + "q_h", key], [p + "scores"], name=p + "qk")]
    nodes += scale
    if mask:  # BERT's additive mask: 0 where attended, -10000 where padded
        nodes += [constant(p + "mask", np.zeros((1, 1, 1, SEQUENCE))),
                  helper.make_node("Add", [p + "scaled", p + "mask"], [p + "masked"],
                                   name=p + "mask_add")]
    nodes += [
        helper.make_node("Softmax", [p + "masked" if mask else p + "scaled"], [p + "probs"],
                         name=p + "softmax", axis=-1),
        helper.make_node("MatMul", [p + "probs", p + "v_h"], [p + "context"], name=p + "pv"),
        helper.make_node("Transpose", [p + "context"], [p + "context_t"], name=p + "merge",
                         perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", [p + "context_t", p + "merged_shape"], [p + "merged"],
                         name=p + "merge_reshape"),
        helper.make_node("MatMul", [p + "merged", p + "wo"], [p + "o_mm"], name=p + "out"),
        helper.make_node("Add", [p + "o_mm", p + "bo"], [out], name=p + "out_bias")]
    weights = [weight(p + "w" + n, HIDDEN, HIDDEN) for n in "qkvo"]
    weights += [weight(p + "b" + n, HIDDEN) for n in "qkvo"]
    return nodes, weights


def gelu_nodes(p, x, out, layer):
    """GELU as PyTorch exports nn.GELU before opset 20: x * (1 + erf(x / sqrt 2)) * 0.5, or
    (0.5 x) * (1 + erf(x * (1 / sqrt 2)))."""
    nodes = [constant(p + "one", 1.0), constant(p + "half", 0.5)]
    if layer == 0:
        return nodes + [
            constant(p + "root_2", np.sqrt(2.0)),
            helper.make_node("Div", [x, p + "root_2"], [p + "g1"], name=p + "gelu_div"),
            helper.make_node("Erf", [p + "g1"], [p + "g2"], name=p + "gelu_erf"),
            helper.make_node("Add", [p + "g2", p + "one"], [p + "g3"], name=p + "gelu_add"),
            helper.make_node("Mul", [x, p + "g3"], [p + "g4"], name=p + "gelu_mul"),
            helper.make_node("Mul", [p + "g4", p + "half"], [out], name=p + "gelu_half")]
    return nodes + [
        constant(p + "inverse_root_2", np.sqrt(0.5)),
        helper.make_node("Mul", [x, p + "half"], [p + "g0"], name=p + "gelu_half"),
        helper.make_node("Mul", [x, p + "inverse_root_2"], [p + "g1"], name=p + "gelu_scale"),
        helper.make_node("Erf", [p + "g1"], [p + "g2"], name=p + "gelu_erf"),
        helper.make_node("Add", [p + "one", p + "g2"], [p + "g3"], name=p + "gelu_add"),
        helper.make_node("Mul", [p + "g0", p + "g3"], [out], name=p + "gelu_mul")]


def dense_nodes(name, x, out, rows, cols):
    return ([helper.make_node("MatMul", [x, name + "_w"], [name + "_mm"], name=name),
             helper.make_node("Add", [name + "_mm", name + "_b"], [out], name=name + "_bias")],
            [weight(name + "_w", rows, cols), weight(name + "_b", cols)])


def layer_norm_nodes(name, x, out):
    return ([helper.make_node("LayerNormalization", [x, name + "_g", name + "_b"], [out],
                              name=name, axis=-1, epsilon=1e-12)],
            [numpy_helper.from_array((1 + 0.1 * RNG.standard_normal(HIDDEN)).astype(np.float32),
                                     name + "_g"), weight(name + "_b", HIDDEN)])


def encoder_nodes(layer, x, out):
    """A post-LN encoder layer: LN(x + attention(x)), then LN(y + W2 gelu(W1 y))."""
    p = f"layer{layer}/"
    parts = [attention_nodes(p + "attention/", x, p + "attended", layer),
             ([helper.make_node("Add", [x, p + "attended"], [p + "r1"], name=p + "residual1")],
              []),
             layer_norm_nodes(p + "norm1", p + "r1", p + "y1"),
             dense_nodes(p + "ffn1", p + "y1", p + "f1", HIDDEN, FFN),
             (gelu_nodes(p, p + "f1", p + "g", layer), []),
             dense_nodes(p + "ffn2", p + "g", p + "f2", FFN, HIDDEN),
             ([helper.make_node("Add", [p + "y1", p + "f2"], [p + "r2"], name=p + "residual2")],
              []),
             layer_norm_nodes(p + "norm2", p + "r2", out)]
    return [n for nodes, _ in parts for n in nodes], [w for _, ws in parts for w in ws]


def transformer(path):
    """Token ids -> embedding (Gather, + positions, LayerNormalization) -> 2 encoder layers ->
    a per-token classifier over the vocabulary (masked-language modelling)."""
    nodes = [helper.make_node("Gather", ["word", "ids"], ["e0"], name="embed/word", axis=0),
             helper.make_node("Add", ["e0", "positions"], ["e1"], name="embed/positions")]
    weights = [weight("word", VOCAB, HIDDEN), weight("positions", SEQUENCE, HIDDEN)]
    parts = [layer_norm_nodes("embed/norm", "e1", "x0"), encoder_nodes(0, "x0", "x1"),
             encoder_nodes(1, "x1", "x2"), dense_nodes("head", "x2", "logits", HIDDEN, VOCAB)]
    for more_nodes, more_weights in parts:
        nodes += more_nodes
        weights += more_weights
    nodes.append(helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1))
    graph = helper.make_graph(
        nodes, "onnx_transformer",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", SEQUENCE])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", SEQUENCE, VOCAB])],
        weights)
    return save(graph, path, opset=17)


def unsupported(path):
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1", transB=1),
        helper.make_node("Softplus", ["h1"], ["a1"], name="gate"),
        helper.make_node("LeakyRelu", ["a1"], ["a2"], name="leaky"),
        helper.make_node("Softmax", ["a2"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "onnx_unsupported",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 4])],
        [weight("w1", 4, 8), weight("b1", 4)])
    return save(graph, path)


def conv(x, k, c, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _, h, w = x.shape
    out_h, out_w = h - k.shape[2] + 1, w - k.shape[3] + 1
    y = np.zeros((n, k.shape[0], out_h, out_w))
    for i in range(k.shape[2]):
        for j in range(k.shape[3]):
            y += np.einsum("nchw,oc->nohw", x[:, :, i:i + out_h, j:j + out_w], k[:, :, i, j])
    return y + c[None, :, None, None]


def batch_norm(x, g, b, epsilon):
    """Training mode: each channel over the micro-batch and the image."""
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    variance = x.var(axis=(0, 2, 3), keepdims=True)
    return ((x - mean) / np.sqrt(variance + epsilon) * g[None, :, None, None]
            + b[None, :, None, None])


def branches_logits(w, x):
    a = np.maximum(batch_norm(conv(x, w["ka"], w["ca"], 1), w["bn_g"], w["bn_b"], 1e-3), 0)
    joined = np.concatenate([a, conv(x, w["kb"], np.zeros(2), 1)], axis=1)
    n, c, h, wd = joined.shape
    pooled = joined.reshape(n, c, h // 2, 2, wd // 2, 2).max(axis=(3, 5))
    residual = pooled + conv(pooled, w["kc"], w["cc"], 1)
    return residual.mean(axis=(2, 3)) @ w["w"].T + w["b"]


def mlp_logits(w, x):
    h = np.maximum(x @ w["w1"].T + w["b1"], 0)
    return h @ w["w2"].T + w["b2"]


def cnn_logits(w, x):
    y = np.maximum(conv(x, w["k1"], w["c1"], 1), 0)
    n, c, h, wd = y.shape
    y = y.reshape(n, c, h // 2, 2, wd // 2, 2).max(axis=(3, 5))
    y = np.maximum(conv(y, w["k2"], w["c2"], 0), 0).reshape(n, -1)
    y = np.tanh(y @ w["w3"] + w["b3"])
    return y @ w["w4"] + w["b4"]


def layer_norm(x, g, b, epsilon=1e-12):
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * g + b


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention(w, p, x):
    d = HIDDEN // HEADS

    def heads(t):
        return t.reshape(len(t), SEQUENCE, HEADS, d).transpose(0, 2, 1, 3)

    q, k, v = (heads(x @ w[p + "w" + n] + w[p + "b" + n]) for n in "qkv")
    probs = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d))
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(len(x), SEQUENCE, HIDDEN)
    return context @ w[p + "wo"] + w[p + "bo"]


def gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2)))


def transformer_logits(w, ids):
    x = layer_norm(w["word"][ids] + w["positions"], w["embed/norm_g"], w["embed/norm_b"])
    for layer in range(2):
        p = f"layer{layer}/"
        y = layer_norm(x + attention(w, p + "attention/", x), w[p + "norm1_g"], w[p + "norm1_b"])
        f = gelu(y @ w[p + "ffn1_w"] + w[p + "ffn1_b"]) @ w[p + "ffn2_w"] + w[p + "ffn2_b"]
        x = layer_norm(y + f, w[p + "norm2_g"], w[p + "norm2_b"])
    return x @ w["head_w"] + w["head_b"]


def cross_entropy(logits, labels):
    """The mean over labelled rows (masked-token labels are -1 where nothing is predicted)."""
    logits = logits.reshape(-1, logits.shape[-1])
    labels = labels.reshape(-1)
    logits, labels = logits[labels >= 0], labels[labels >= 0]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -log_probs[np.arange(len(labels)), labels].mean()


def run(*args, expect=0):
    result = subprocess.run([IPUSIM, *args], capture_output=True, text=True)
    if result.returncode != expect:
        sys.exit(f"ipusim {' '.join(args)}: exit {result.returncode}, expected {expect}\n"
                 f"{result.stdout}{result.stderr}")
    return result


def check_model(folder, name, make, logits_of, to_onnx_layout, running=0):
    """`running`: how many of the initializers are batch-norm running statistics."""
    source = os.path.join(folder, name + ".onnx")
    weights = make(source)
    in_file = sum(w.size for w in weights.values())
    parameters = in_file - running
    config = os.path.join(folder, name + ".json")
    out = run("import", source, "-o", config).stdout
    expected = f"parameters ({in_file:,} in the file's initializers" + (
        f", of which {running:,} are batch-norm running statistics, imported as such)"
        if running else ")")
    if f" {parameters:,} parameters" not in out or expected not in out:
        sys.exit(f"{name}: expected {parameters:,} parameters, ipusim says: {out}")
    saved = os.path.join(folder, name + "_run")
    run("train", config, "--steps", "1", "--test-samples", "0", "--save", saved,
        "--micro-batch", str(MICRO_BATCH), "--gac", "4")
    inputs = np.load(os.path.join(saved, "inputs.npy"))[:MICRO_BATCH].astype(np.float64)
    labels = np.load(os.path.join(saved, "labels.npy"))[:MICRO_BATCH]
    ipusim_loss = float(np.load(os.path.join(saved, "losses.npy"))[0, 0])
    numpy_loss = cross_entropy(logits_of(weights, to_onnx_layout(inputs)), labels)
    if abs(ipusim_loss - numpy_loss) > 1e-5 * abs(numpy_loss):
        sys.exit(f"{name}: first loss {ipusim_loss} in ipusim, {numpy_loss} in numpy")
    print(f"{name}: {parameters:,} parameters, first loss {ipusim_loss:.6f} (numpy "
          f"{numpy_loss:.6f})")
    return weights, saved


def check_running_statistics(weights, saved):
    """The batch norm starts from the file's running mean and variance, and the step's four
    micro-batches fold in their statistics in order with ONNX's default momentum 0.9."""
    inputs = np.load(os.path.join(saved, "inputs.npy")).astype(np.float64).transpose(0, 3, 1, 2)
    mean, variance = weights["bn_mean"].astype(np.float64), weights["bn_var"].astype(np.float64)
    for name, expected in [("moving_mean", mean), ("moving_variance", variance)]:
        start = np.load(os.path.join(saved, f"norm_a.{name}.initial.npy"))
        if not np.array_equal(start, expected.astype(np.float32)):
            sys.exit(f"norm_a.{name} starts at {start}, the file has {expected}")
    for m in range(4):
        y = conv(inputs[m * MICRO_BATCH:(m + 1) * MICRO_BATCH], weights["ka"], weights["ca"], 1)
        mean = 0.9 * mean + 0.1 * y.mean(axis=(0, 2, 3))
        variance = 0.9 * variance + 0.1 * y.var(axis=(0, 2, 3))
    for name, expected in [("moving_mean", mean), ("moving_variance", variance)]:
        final = np.load(os.path.join(saved, f"norm_a.{name}.final.npy"))
        if np.abs(final - expected).max() > 1e-5 * (1 + np.abs(expected).max()):
            sys.exit(f"norm_a.{name} after a step: {final} in ipusim, {expected} in numpy")
    print("branches: the batch norm starts from the file's running statistics and updates them "
          "as numpy does over four micro-batches")


def check_pipelined(folder):
    """The imported transformer over four IPUs trains bit-identical to the one-device reference
    under Graphcore's three schedules and 1F1B."""
    config = os.path.join(folder, "transformer_4ipu.json")
    run("import", os.path.join(folder, "transformer.onnx"), "-o", config, "--splits",
        "layer0_attention,layer1_attention,head")
    for schedule in ["grouped", "interleaved", "sequential", "1f1b"]:
        out = run("run", config, "--numeric", "--schedule", schedule).stdout
        if "Bit-identical to the reference" not in out:
            sys.exit(f"transformer under {schedule}: {out}")
    print("transformer: bit-identical to the reference over 4 IPUs under grouped, interleaved, "
          "sequential and 1f1b")


BY_HAND = ("write this part of the model in the config by hand (README, \"model\", lists the "
           "layer types)")


def check_refusals(folder):
    source = os.path.join(folder, "unsupported.onnx")
    unsupported(source)
    config = os.path.join(folder, "unsupported.json")
    err = run("import", source, "-o", config, expect=2).stderr
    expected = (f"error: {source}: cannot import 2 node(s) (2 cause(s)), so nothing was "
                "written:\n"
                "  Softplus x1: no ipusim layer for this operator\n"
                "    first: node 'gate', reading 'h1' [1, 4]\n"
                f"    to import it: {BY_HAND}, or export the model without this operator\n"
                "  LeakyRelu x1: no ipusim layer for this operator\n"
                "    first: node 'leaky', reading 'a1' [1, 4]\n"
                f"    to import it: {BY_HAND}, or export the model without this operator\n"
                "(ipusim import --verbose lists every node)\n")
    if err != expected or os.path.exists(config):
        sys.exit(f"unsupported operators: got {err!r}")
    garbage = os.path.join(folder, "garbage.onnx")
    with open(garbage, "wb") as f:
        f.write(b"\x0a\xff\xff\xff\xff garbage")
    err = run("import", garbage, "-o", config, expect=2).stderr
    if "not an ONNX model" not in err or os.path.exists(config):
        sys.exit(f"garbage file: got {err!r}")
    print("refusals: unsupported operators grouped by cause, a garbage file refused, nothing "
          "written")


def check_refused(folder, name, nodes, graph_input, weights, expected):
    """`nodes` read `graph_input` and end in a value 'f' that a Gemm of 'w' and 'c' and a Softmax
    turn into 4 probabilities: the import refuses the file with `expected`, writing nothing."""
    nodes = nodes + [
        helper.make_node("Gemm", ["f", "w", "c"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1)]
    graph = helper.make_graph(
        nodes, f"onnx_{name}", [graph_input],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 4])], weights)
    source = os.path.join(folder, f"{name}.onnx")
    config = os.path.join(folder, f"{name}.json")
    save(graph, source)
    err = run("import", source, "-o", config, expect=2).stderr
    if expected not in err or os.path.exists(config):
        sys.exit(f"{name} refusal: got {err!r}")


def check_mul_refusals(folder):
    """A Mul ipusim's multiply cannot take is named (by a constant, or of shapes neither of which
    broadcasts to the other), and so are an InstanceNormalization outside PyTorch's GroupNorm, a
    Split outside a GLU and a HardSigmoid other than PyTorch's."""
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1", transB=1),
        helper.make_node("Gemm", ["x", "w2", "b2"], ["h2"], name="fc2", transB=1),
        helper.make_node("Mul", ["h1", "h2"], ["m1"], name="mismatched"),
        helper.make_node("Mul", ["h1", "scale"], ["m2"], name="scaled"),
        helper.make_node("Add", ["m1", "m2"], ["s"], name="sum"),
        helper.make_node("Softmax", ["s"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "onnx_mul_refused",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 4])],
        [weight("w1", 4, 8), weight("b1", 4), weight("w2", 3, 8), weight("b2", 3),
         weight("scale", 4)])
    source = os.path.join(folder, "mul_refused.onnx")
    save(graph, source)
    config = os.path.join(folder, "mul_refused.json")
    err = run("import", source, "-o", config, expect=2).stderr
    for expected in [
            "  Mul x1: a Mul of values of shapes [4] and [3] (ipusim's multiply broadcasts one to "
            "the other's shape by numpy's rule, an image only by one of its rank)\n"
            "    first: node 'mismatched'",
            "  Mul x1: a Mul by a constant (ipusim's multiply takes two layers' outputs)\n"
            "    first: node 'scaled'"]:
        if expected not in err or os.path.exists(config):
            sys.exit(f"Mul refusals: got {err!r}")
    image = helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 2, 4, 4])
    features = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])
    check_refused(folder, "instance_norm", [
        helper.make_node("InstanceNormalization", ["image", "s", "b"], ["n"], name="instance"),
        helper.make_node("Flatten", ["n"], ["f"], name="flatten")],
        image, [weight("s", 2), weight("b", 2), weight("w", 4, 32), weight("c", 4)],
        "  InstanceNormalization x1: an InstanceNormalization other than PyTorch's GroupNorm "
        "(a Reshape to [batch, groups, -1], scale 1 and bias 0, a Reshape back, then a Mul "
        "by a constant scale and an Add of a constant bias)\n")
    check_refused(folder, "split", [
        helper.make_node("Split", ["x"], ["a", "b"], name="halves", axis=1),
        helper.make_node("Add", ["a", "b"], ["f"], name="sum")],
        features, [weight("w", 4, 4), weight("c", 4)],
        "  Split x1: a Split other than a GLU's (two equal halves a and b of a value that is "
        "not an image, then a Mul of a by the Sigmoid of b)\n")
    check_refused(folder, "hard_sigmoid", [
        helper.make_node("HardSigmoid", ["x"], ["f"], name="keras_hard_sigmoid", alpha=0.2)],
        features, [weight("w", 4, 8), weight("c", 4)],
        "  HardSigmoid x1: a HardSigmoid with alpha 0.200000 and beta 0.500000 (ipusim's "
        "hard_sigmoid is PyTorch's: alpha 1/6, beta 0.5)\n")
    print("refusals: a Mul by a constant, one of shapes that do not broadcast, an "
          "InstanceNormalization that is no GroupNorm, a Split that is no GLU and a HardSigmoid "
          "that is not PyTorch's, named")


def refused_graph(nodes, weights, inputs):
    graph = helper.make_graph(
        nodes, "onnx_refused", inputs,
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", SEQUENCE, HIDDEN])],
        weights)
    return graph


def check_transformer_refusals(folder):
    """What ipusim cannot represent in a transformer is named: a mask added to attention
    scores, an Erf that is no GELU, a Gather from a computed value."""
    config = os.path.join(folder, "refused.json")
    attention, weights = attention_nodes("masked/", "x", "a", 0, mask=True)
    graph = refused_graph(
        attention + [helper.make_node("Softmax", ["a"], ["probs"], name="end", axis=-1)], weights,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", SEQUENCE, HIDDEN])])
    source = os.path.join(folder, "masked.onnx")
    save(graph, source, opset=17)
    err = run("import", source, "-o", config, expect=2).stderr
    expected = ("  Softmax x1: an attention with a mask added to its scores (ipusim's attention "
                "takes its padding mask as a second input)\n")
    if expected not in err or os.path.exists(config):
        sys.exit(f"masked attention: got {err!r}")
    graph = refused_graph(
        [helper.make_node("Erf", ["x"], ["e"], name="lonely_erf"),
         helper.make_node("Gather", ["x", "x"], ["g"], name="gather_of_values", axis=0),
         helper.make_node("Add", ["e", "g"], ["s"], name="sum"),
         helper.make_node("Softmax", ["s"], ["probs"], name="end", axis=-1)], [],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", SEQUENCE, HIDDEN])])
    source = os.path.join(folder, "erf.onnx")
    save(graph, source, opset=17)
    err = run("import", source, "-o", config, "--verbose", expect=2).stderr
    expected = (f"error: {source}: cannot import 2 node(s) (2 cause(s)), so nothing was "
                "written:\n"
                "  Erf x1: an Erf that is not part of a GELU (0.5 x (1 + erf(x / sqrt 2)))\n"
                "    first: node 'lonely_erf', reading 'x' [1, 8, 8]\n"
                f"    to import it: change the model to the form named, or {BY_HAND}\n"
                "  Gather x1: only a lookup of the model input's token ids in a [vocabulary, "
                "hidden] initializer (an embedding), or of one token of a sequence (a constant "
                "scalar index on axis 1 of [batch, sequence, hidden], token_select)\n"
                "    first: node 'gather_of_values', reading 'x' [1, 8, 8], 'x' [1, 8, 8]\n"
                f"    to import it: change the model to the form named, or {BY_HAND}\n"
                "every node:\n"
                "  node 'lonely_erf' (Erf): an Erf that is not part of a GELU "
                "(0.5 x (1 + erf(x / sqrt 2)))\n"
                "  node 'gather_of_values' (Gather): only a lookup of the model input's token "
                "ids in a [vocabulary, hidden] initializer (an embedding), or of one token of a "
                "sequence (a constant scalar index on axis 1 of [batch, sequence, hidden], "
                "token_select)\n")
    if err != expected or os.path.exists(config):
        sys.exit(f"lonely Erf and a Gather of values: got {err!r}")
    print("transformer refusals: a masked attention, an Erf that is no GELU and a Gather of "
          "values are named")


def check_missing_weights(folder):
    import json
    config = os.path.join(folder, "mlp.json")
    with open(config) as f:
        document = json.load(f)
    document["model"]["initial_weights"] = "missing.weights"
    moved = os.path.join(folder, "moved.json")
    with open(moved, "w") as f:
        json.dump(document, f)
    err = run("run", moved, "--numeric", "--quiet", expect=2).stderr
    expected = (f"error: {moved}: at /model/initial_weights: expected a directory of .npy "
                f"files, but {os.path.join(folder, 'missing.weights')} is not one\n")
    if err != expected:
        sys.exit(f"missing weights folder: got {err!r}")
    print("initial_weights: a missing folder is an error naming the config and the key")


def check_maxpool_default_stride(folder):
    """A MaxPool without strides steps by ONNX's default, 1 along each axis, not by its kernel
    as Keras's MaxPooling2D (and ipusim's maxpool2d without a stride) does."""
    import json
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], name="pool", kernel_shape=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
             helper.make_node("MatMul", ["f", "w"], ["logits"], name="fc"),
             helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1)]
    graph = helper.make_graph(
        nodes, "onnx_pool_stride",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 4, 4])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])],
        [weight("w", 9, 10)])
    source = os.path.join(folder, "pool_stride.onnx")
    save(graph, source)
    config = os.path.join(folder, "pool_stride.json")
    run("import", source, "-o", config)
    with open(config) as f:
        layers = json.load(f)["model"]["layers"]
    pool = next(layer for layer in layers if layer["type"] == "maxpool2d")
    if pool.get("stride") != [1, 1]:
        sys.exit(f"MaxPool without strides: imported as {pool}, expected stride [1, 1]")
    print("MaxPool without strides: stride [1, 1], a 4x4 image pooled to 3x3 (9 features)")


def main():
    with tempfile.TemporaryDirectory() as folder:
        check_model(folder, "mlp", mlp, mlp_logits, lambda x: x)
        check_model(folder, "cnn", cnn, cnn_logits, lambda x: x.transpose(0, 3, 1, 2))
        check_running_statistics(*check_model(folder, "branches", branches, branches_logits,
                                              lambda x: x.transpose(0, 3, 1, 2), running=8))
        check_model(folder, "transformer", transformer, transformer_logits,
                    lambda x: x.astype(np.int64))
        check_pipelined(folder)
        check_missing_weights(folder)
        check_refusals(folder)
        check_transformer_refusals(folder)
        check_mul_refusals(folder)
        check_maxpool_default_stride(folder)


if __name__ == "__main__":
    main()
