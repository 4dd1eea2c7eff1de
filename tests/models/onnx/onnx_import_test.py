#!/usr/bin/python3
"""ipusim import of ONNX models built here with python3-onnx's helper API, never downloaded:
an MLP (PyTorch-style Gemm with transB), a CNN (Conv with 'same' and no padding, MaxPool,
Flatten of channels-first features, MatMul + Add) and a graph with an unsupported operator.
Each imported config has the file's parameter count, and its first training step through the
simulated pipeline starts from the file's weights: the loss ipusim saves equals the loss numpy
computes from the same weights on the same samples.

    tests/models/onnx/onnx_import_test.py IPUSIM
"""
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


def save(graph, path):
    model = helper.make_model(graph, producer_name="onnx.helper",
                              opset_imports=[helper.make_opsetid("", 13)])
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


def unsupported(path):
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1", transB=1),
        helper.make_node("Sigmoid", ["h1"], ["a1"], name="gate"),
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


def cross_entropy(logits, labels):
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -log_probs[np.arange(len(labels)), labels].mean()


def run(*args, expect=0):
    result = subprocess.run([IPUSIM, *args], capture_output=True, text=True)
    if result.returncode != expect:
        sys.exit(f"ipusim {' '.join(args)}: exit {result.returncode}, expected {expect}\n"
                 f"{result.stdout}{result.stderr}")
    return result


def check_model(folder, name, make, logits_of, to_onnx_layout):
    source = os.path.join(folder, name + ".onnx")
    weights = make(source)
    parameters = sum(w.size for w in weights.values())
    config = os.path.join(folder, name + ".json")
    out = run("import", source, "-o", config).stdout
    expected = f"parameters ({parameters:,} in the file's initializers)"
    if f" {parameters:,} parameters" not in out or expected not in out:
        sys.exit(f"{name}: expected {parameters:,} parameters, ipusim says: {out}")
    saved = os.path.join(folder, name + "_run")
    run("train", config, "--steps", "1", "--save", saved, "--micro-batch", str(MICRO_BATCH),
        "--gac", "4")
    inputs = np.load(os.path.join(saved, "inputs.npy"))[:MICRO_BATCH].astype(np.float64)
    labels = np.load(os.path.join(saved, "labels.npy"))[:MICRO_BATCH]
    ipusim_loss = float(np.load(os.path.join(saved, "losses.npy"))[0, 0])
    numpy_loss = cross_entropy(logits_of(weights, to_onnx_layout(inputs)), labels)
    if abs(ipusim_loss - numpy_loss) > 1e-5 * abs(numpy_loss):
        sys.exit(f"{name}: first loss {ipusim_loss} in ipusim, {numpy_loss} in numpy")
    print(f"{name}: {parameters:,} parameters, first loss {ipusim_loss:.6f} (numpy "
          f"{numpy_loss:.6f})")


def check_refusals(folder):
    source = os.path.join(folder, "unsupported.onnx")
    unsupported(source)
    config = os.path.join(folder, "unsupported.json")
    err = run("import", source, "-o", config, expect=2).stderr
    expected = (f"error: {source}: cannot import 2 node(s), so nothing was written:\n"
                "  node 'gate' (Sigmoid): no ipusim layer for this operator\n"
                "  node 'leaky' (LeakyRelu): no ipusim layer for this operator\n")
    if err != expected or os.path.exists(config):
        sys.exit(f"unsupported operators: got {err!r}")
    garbage = os.path.join(folder, "garbage.onnx")
    with open(garbage, "wb") as f:
        f.write(b"\x0a\xff\xff\xff\xff garbage")
    err = run("import", garbage, "-o", config, expect=2).stderr
    if "not an ONNX model" not in err or os.path.exists(config):
        sys.exit(f"garbage file: got {err!r}")
    print("refusals: unsupported operators listed, a garbage file refused, nothing written")


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


def main():
    with tempfile.TemporaryDirectory() as folder:
        check_model(folder, "mlp", mlp, mlp_logits, lambda x: x)
        check_model(folder, "cnn", cnn, cnn_logits, lambda x: x.transpose(0, 3, 1, 2))
        check_missing_weights(folder)
        check_refusals(folder)


main()
