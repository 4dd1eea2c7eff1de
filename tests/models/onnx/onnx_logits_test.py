#!/usr/bin/python3
"""ipusim import of classifiers that end in logits, as PyTorch exports them with the loss
outside the model: an ONNX MLP whose graph ends in its last Gemm imports with a
softmax_cross_entropy loss appended, says so in a note, and its first training step from the
file's weights gives the loss numpy computes; a graph that ends in a Relu of its classes
(SqueezeNet ends so) takes the loss too; a graph that ends in an image has no loss to take and
is refused.

    tests/models/onnx/onnx_logits_test.py IPUSIM
"""
import os
import sys
import tempfile

from onnx import TensorProto, helper

from onnx_import_test import check_model, mlp_logits, run, save, weight


def logits_mlp(path, last="Gemm"):
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1", transB=1),
        helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
        helper.make_node("Gemm", ["a1", "w2", "b2"], ["logits"], name="fc2", transB=1),
    ]
    if last == "Relu":
        nodes.append(helper.make_node("Relu", ["logits"], ["out"], name="relu2"))
    graph = helper.make_graph(
        nodes, "onnx_logits_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 784])],
        [helper.make_tensor_value_info("logits" if last == "Gemm" else "out", TensorProto.FLOAT,
                                       ["N", 10])],
        [weight("w1", 64, 784), weight("b1", 64), weight("w2", 10, 64), weight("b2", 10)])
    return save(graph, path)


def expect_logits_note(source, config, layer, what):
    """The import of `source` succeeds and ends with the note that it appended the loss after
    `layer`, a dense layer."""
    out = run("import", source, "-o", config).stdout
    expected = (f"note: the graph ends in logits (layer '{layer}', dense); the import appends a "
                "softmax_cross_entropy loss, as PyTorch's nn.CrossEntropyLoss applies it "
                "outside the model\n")
    if not out.endswith(expected):
        sys.exit(f"{what}: got {out!r}")


def check_note(folder):
    expect_logits_note(os.path.join(folder, "logits_mlp.onnx"),
                       os.path.join(folder, "again.json"), "fc2", "logits note")
    print("logits: the import notes the loss it appends")


def check_relu_end(folder):
    source = os.path.join(folder, "relu_end.onnx")
    logits_mlp(source, last="Relu")
    # The Relu folds into fc2 as its activation: a dense layer with one, not logits before.
    expect_logits_note(source, os.path.join(folder, "relu_end.json"), "fc2",
                       "a graph ending in a Relu of its classes")
    print("logits: a graph ending in a Relu of its 10 classes takes the loss")


def check_image_end(folder):
    source = os.path.join(folder, "image_end.onnx")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["out"], name="conv", pads=[1, 1, 1, 1])],
        "onnx_image_end",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 8, 4, 4])],
        [weight("w", 8, 3, 3, 3)])
    save(graph, source)
    config = os.path.join(folder, "image_end.json")
    err = run("import", source, "-o", config, expect=2).stderr
    expected = (f"error: {source}: the graph ends in neither a Softmax nor logits (a Gemm or "
                "MatMul without an activation, or a vector of classes a sample), so ipusim has "
                "no loss to train it with\n")
    if err != expected or os.path.exists(config):
        sys.exit(f"a graph ending in an image: got {err!r}")
    print("logits: a graph ending in an image is refused, nothing written")


def main():
    with tempfile.TemporaryDirectory() as folder:
        check_model(folder, "logits_mlp", logits_mlp, mlp_logits, lambda x: x)
        check_note(folder)
        check_relu_end(folder)
        check_image_end(folder)


if __name__ == "__main__":
    main()
