#!/usr/bin/python3
"""ipusim import of graphs written as PyTorch exports them, built here with python3-onnx's
helper API: a zero bias stored once and read by a second convolution through an Identity, and a
Reshape whose target is computed from the input's Shape on a dynamic batch. Normalisation makes
both importable: each convolution gets its own bias, the parameter count is PyTorch's, and the
Reshape is a flatten.

    tests/models/onnx/onnx_normalize_test.py IPUSIM
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IPUSIM = os.path.abspath(sys.argv[1])


def save(nodes, name, inputs, weights, path):
    graph = helper.make_graph(
        nodes, name, inputs,
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])], weights)
    model = helper.make_model(graph, producer_name="onnx.helper",
                              opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def array(name, values, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def run(*args):
    result = subprocess.run([IPUSIM, *args], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"ipusim {' '.join(args)}: exit {result.returncode}\n{result.stderr}")
    return result.stdout


def check_shared_bias(folder):
    """Two convolutions of 4 filters whose zero biases PyTorch stored once: k1 (36) + bias (4)
    + k2 (144) + its bias (4) + fc (1,440 + 10) = 1,638 parameters, 1,634 of them stored."""
    rng = np.random.default_rng(3)
    nodes = [
        helper.make_node("Conv", ["x", "k1", "zero"], ["y1"], name="conv1", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["y1"], ["r1"], name="relu1"),
        helper.make_node("Identity", ["zero"], ["conv2.bias"], name="alias"),
        helper.make_node("Conv", ["r1", "k2", "conv2.bias"], ["y2"], name="conv2",
                         pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Flatten", ["y2"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "w", "b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1)]
    weights = [array("k1", rng.standard_normal((4, 1, 3, 3))), array("zero", np.zeros(4)),
               array("k2", rng.standard_normal((4, 4, 3, 3))),
               array("w", rng.standard_normal((10, 144))), array("b", np.zeros(10))]
    source = os.path.join(folder, "shared.onnx")
    save(nodes, "shared_bias", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                              ["batch", 1, 6, 6])],
         weights, source)
    config = os.path.join(folder, "shared.json")
    out = run("import", source, "-o", config)
    want = (f"imported shared_bias (ONNX, onnx.helper) from {source}: 6 layers, 1,638 parameters "
            "(1,638 in the file's initializers, counting 4 stored once for several equal "
            "parameters once per parameter); wrote " + config + " and its initial weights in "
            + os.path.join(folder, "shared.weights") + "/\n")
    if out != want:
        sys.exit(f"shared bias: got {out!r}\nwant {want!r}")
    for conv in ["conv1", "conv2"]:
        bias = np.load(os.path.join(folder, "shared.weights", f"{conv}.bias.initial.npy"))
        if bias.shape != (4,) or bias.any():
            sys.exit(f"{conv}'s bias: {bias}, expected four zeros")
    print("shared bias: both convolutions import with their own zero bias, 1,638 parameters")


def check_shape_chain(folder):
    """x.reshape(x.shape[0], -1) on a dynamic batch: Shape, Gather, Unsqueeze, Concat."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Shape", ["r"], ["shape"], name="shape"),
        helper.make_node("Constant", [], ["zero"], name="zero",
                         value=array("zero", 0, np.int64)),
        helper.make_node("Gather", ["shape", "zero"], ["n"], name="gather", axis=0),
        helper.make_node("Constant", [], ["axes"], name="axes", value=array("axes", [0], np.int64)),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
        helper.make_node("Constant", [], ["rest"], name="rest", value=array("rest", [-1], np.int64)),
        helper.make_node("Concat", ["n1", "rest"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["r", "target"], ["f"], name="reshape"),
        helper.make_node("Gemm", ["f", "w", "b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1)]
    source = os.path.join(folder, "chain.onnx")
    save(nodes, "shape_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                              ["batch", 2, 3, 3])],
         [array("w", np.ones((10, 18))), array("b", np.zeros(10))], source)
    config = os.path.join(folder, "chain.json")
    run("import", source, "-o", config)
    with open(config) as f:
        layers = [(layer["id"], layer["type"]) for layer in json.load(f)["model"]["layers"]]
    want = [("input", "input"), ("relu", "relu"), ("reshape", "flatten"), ("fc", "dense"),
            ("loss", "softmax_cross_entropy")]
    if layers != want:
        sys.exit(f"shape chain: layers {layers}, expected {want}")
    print("shape chain: a Reshape to [x.shape[0], -1] on a dynamic batch imports as a flatten")


def main():
    with tempfile.TemporaryDirectory() as folder:
        check_shared_bias(folder)
        check_shape_chain(folder)


main()
