#!/usr/bin/python3
"""ipusim import of hostile files: ONNX models whose nodes lack inputs, whose attributes and
initializers lie about their sizes or hold NaNs, and .npz archives whose .npy headers declare
more than any file holds or inflate far past what the model needs. Each is refused with exit
code 2 and one error line naming the file and the node, initializer or array, never a crash or
an internal error. A bounded random mutation of a valid model (fixed seed) only ever exits 0 or 2.

    tests/models/onnx/onnx_hostile_test.py IPUSIM
"""
import io
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_import_test as base  # noqa: E402  (its builders; its main() runs only as a script)

IPUSIM = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
KERAS_CNN = os.path.join(HERE, "..", "keras", "keras_cnn.json")


def run(*args):
    return subprocess.run([IPUSIM, *args], capture_output=True, text=True, errors="replace")


def refused(folder, name, model_bytes, expected, suffix=".onnx", line=False):
    """Writes `model_bytes`, imports it and checks exit code 2, the exact error (or, with
    `line`, one exact line of it) and that nothing was written."""
    source = os.path.join(folder, name + suffix)
    with open(source, "wb") as f:
        f.write(model_bytes)
    config = os.path.join(folder, name + ".config.json")
    model = KERAS_CNN if suffix == ".npz" else source
    result = run("import", model, "-o", config,
                 *(["--weights", source] if suffix == ".npz" else []))
    want = f"  {expected}\n" if line else f"error: {source}: {expected}\n"
    matches = want in result.stderr if line else result.stderr == want
    if result.returncode != 2 or not matches or os.path.exists(config):
        sys.exit(f"{name}: exit {result.returncode}, expected 2\n got: {result.stderr!r}\n"
                 f"want: {want!r}")


def model_bytes(nodes, inputs, weights, output="probs", output_shape=("N", 10)):
    graph = helper.make_graph(
        nodes, "hostile", inputs,
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, list(output_shape))], weights)
    model = helper.make_model(graph, producer_name="onnx.helper",
                              opset_imports=[helper.make_opsetid("", 13)])
    return model.SerializeToString()  # not checked: onnx.checker would refuse most of these


def features(width):
    return [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", width])]


def image(c, h, w):
    return [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", c, h, w])]


def softmax(x="logits"):
    return helper.make_node("Softmax", [x], ["probs"], name="softmax", axis=1)


def gemm(w, inputs=None, **attributes):
    return helper.make_node("Gemm", inputs if inputs is not None else ["x", w], ["logits"],
                            name="fc", **attributes)


def array(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.float32), name)


def declared(name, dims):
    """A float initializer declaring `dims` and holding no data."""
    t = TensorProto(name=name, data_type=TensorProto.FLOAT)
    t.dims.extend(dims)
    return t


def check_nodes(folder):
    refused(folder, "gemm_short_rows", model_bytes(
        [helper.make_node("Flatten", ["x"], ["f"], name="flatten", axis=1),
         gemm("w", ["f", "w"], transB=1), softmax()], image(2, 4, 4),
        [base.weight("w", 10, 8)]),
        "cannot import 1 node(s) (1 cause(s)), so nothing was written:\n"
        "  Gemm x1: a weight of shape [8, 10] for features of width 32 (expected [32, units])\n"
        "    first: node 'fc', reading 'f' [1, 32], 'w' [10, 8]\n"
        "    to import it: change the model to the form named, or write this part of the model "
        "in the config by hand (README, \"model\", lists the layer types)\n"
        "(ipusim import --verbose lists every node)")
    refused(folder, "gemm_3d_weight", model_bytes(
        [gemm("w"), softmax()], features(4), [base.weight("w", 4, 5, 2)]),
        "Gemm x1: a weight 'w' "
        "of shape [4, 5, 2] (expected a 2-D [in, units] or, with transB, [units, in])", line=True)
    refused(folder, "gemm_no_inputs", model_bytes(
        [gemm("w", []), softmax()], features(4), [base.weight("w", 4, 10)]),
        "node 'fc' (Gemm): expected at least 2 input(s), found 0")
    refused(folder, "relu_no_output", model_bytes(
        [helper.make_node("Relu", ["x"], [], name="relu"), gemm("w"), softmax()], features(4),
        [base.weight("w", 4, 10)]),
        "node 'relu' (Relu): expected an output, found none")
    refused(folder, "concat_of_nothing", model_bytes(
        [helper.make_node("Concat", [], ["c"], name="join", axis=1), gemm("w"), softmax()],
        features(4), [base.weight("w", 4, 10)]),
        "node 'join' (Concat): expected at least 1 input(s), found 0")
    # A Softmax listing the classifier's weights besides its logits: at most one input.
    refused(folder, "softmax_extra_inputs", model_bytes(
        [gemm("w"), helper.make_node("Softmax", ["logits", "w", "b"], ["probs"], name="softmax")],
        features(4), [base.weight("w", 4, 10), array("b", np.zeros(10))]),
        "node 'softmax' (Softmax): expected at most 1 input(s), found 3")
    # A node reading its own output, and one reading a value nothing defines.
    refused(folder, "self_cycle", model_bytes(
        [helper.make_node("Relu", ["r"], ["r"], name="relu"), gemm("w"), softmax()],
        features(4), [base.weight("w", 4, 10)]),
        "node 'relu' (Relu): its input 'r' is neither a graph input, an initializer nor the "
        "output of a node before it (ONNX lists nodes in topological order)")
    refused(folder, "undefined_input", model_bytes(
        [gemm("w", ["nowhere", "w"]), softmax()], features(4), [base.weight("w", 4, 10)]),
        "node 'fc' (Gemm): its input 'nowhere' is neither a graph input, an initializer nor the "
        "output of a node before it (ONNX lists nodes in topological order)")
    refused(folder, "dropout_empty_ratio", model_bytes(
        [helper.make_node("Dropout", ["x", "ratio"], ["d"], name="drop"),
         gemm("w", ["d", "w"]), softmax()], features(4),
        [base.weight("w", 4, 10), array("ratio", np.zeros(0))]),
        "Dropout x1: a ratio "
        "'ratio' of shape [0] (expected one value)", line=True)
    refused(folder, "dropout_nan_ratio", model_bytes(
        [helper.make_node("Dropout", ["x"], ["d"], name="drop", ratio=float("nan")),
         gemm("w", ["d", "w"]), softmax()], features(4), [base.weight("w", 4, 10)]),
        "node 'drop' (Dropout): attribute 'ratio' is nan: expected a finite number")
    # Since opset 12 the ratio is an input; as an attribute it is one the schema lacks.
    refused(folder, "dropout_ratio_of_1", model_bytes(
        [helper.make_node("Dropout", ["x", "ratio"], ["d"], name="drop"),
         gemm("w", ["d", "w"]), softmax()], features(4),
        [base.weight("w", 4, 10), array("ratio", 1.0)]),
        "Dropout x1: a ratio of "
        "1.000000 (expected one from 0 up to, not including, 1)", line=True)
    refused(folder, "norm_infinite_epsilon", model_bytes(
        [helper.make_node("BatchNormalization", ["x", "g", "b", "m", "v"], ["n"], name="norm",
                          epsilon=float("inf")), gemm("w", ["n", "w"]), softmax()], features(4),
        [base.weight("w", 4, 10)] + [array(name, np.ones(4)) for name in "gbmv"]),
        "node 'norm' (BatchNormalization): attribute 'epsilon' is inf: expected a finite number")
    model = helper.make_model(helper.make_graph(
        [gemm("w"), softmax()], "name", features(4),
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])],
        [base.weight("w", 4, 10)]), producer_name="onnx.helper")
    model.graph.name = "bad ? name"  # then a byte of no UTF-8, which protobuf's Python refuses
    data = model.SerializeToString().replace(b"bad ? name", b"bad \x9f name")
    refused(folder, "graph_name_not_utf8", data, "the graph's name is not UTF-8 text")
    print("nodes: missing inputs and outputs, misshapen weights and bad ratios are named")


def check_windows(folder):
    def conv_model(**attributes):
        return model_bytes(
            [helper.make_node("Conv", ["x", "k"], ["y"], name="conv", **attributes),
             helper.make_node("Flatten", ["y"], ["f"], name="flatten", axis=1),
             gemm("w", ["f", "w"], transB=1), softmax()], image(1, 4, 4),
            [base.weight("k", 2, 1, 3, 3), base.weight("w", 10, 8)])

    def pool_model(**attributes):
        return model_bytes(
            [helper.make_node("MaxPool", ["x"], ["y"], name="pool", **attributes),
             helper.make_node("Flatten", ["y"], ["f"], name="flatten", axis=1),
             gemm("w", ["f", "w"], transB=1), softmax()], image(1, 4, 4),
            [base.weight("w", 10, 4)])

    refused(folder, "conv_zero_strides", conv_model(strides=[0, 0]),
            "Conv x1: strides [0, 0] (expected two strides of 1 or more)", line=True)
    refused(folder, "conv_one_stride", conv_model(strides=[1]),
            "Conv x1: strides [1] (expected two strides of 1 or more)", line=True)
    refused(folder, "conv_dilation_past_image", conv_model(dilations=[2, 1]),
            "Conv x1: a kernel [3, 3] dilated by [2, 1] larger than its padded image "
            "[1, 4, 4]", line=True)
    refused(folder, "conv_huge_dilation", conv_model(dilations=[2 ** 62, 1], pads=[1, 1, 1, 1]),
            "Conv x1: a kernel [3, 3] dilated by [4611686018427387904, 1] larger than its "
            "padded image [1, 4, 4]", line=True)
    refused(folder, "conv_huge_dilation_same",
            conv_model(dilations=[2 ** 62, 1], auto_pad="SAME_UPPER"),
            "Conv x1: a kernel [3, 3] dilated by [4611686018427387904, 1] spanning more than "
            "2^40 inputs", line=True)
    refused(folder, "conv_zero_dilation", conv_model(dilations=[0, 1]),
            "Conv x1: dilations [0, 1] (expected two dilations of 1 or more)", line=True)
    refused(folder, "conv_kernel_shape", conv_model(kernel_shape=[3]),
            "Conv x1: kernel_shape [3] (expected two sizes of 1 or more)", line=True)
    refused(folder, "pool_zero_strides", pool_model(kernel_shape=[2, 2], strides=[0, 0]),
            "MaxPool x1: strides [0, 0] (expected two strides of 1 or more)", line=True)
    refused(folder, "pool_one_stride", pool_model(kernel_shape=[2, 2], strides=[1]),
            "MaxPool x1: strides [1] (expected two strides of 1 or more)", line=True)
    refused(folder, "pool_zero_kernel", pool_model(kernel_shape=[0, 2]),
            "MaxPool x1: kernel_shape [0, 2] (expected two sizes of 1 or "
            "more)", line=True)
    refused(folder, "pool_kernel_past_image", pool_model(kernel_shape=[5, 5]),
            "MaxPool x1: a kernel [5, 5] larger than its padded image [1, 4, 4]", line=True)
    for stride in (2 ** 31, 2 ** 62):
        refused(folder, f"conv_transpose_stride_{stride}", model_bytes(
            [helper.make_node("ConvTranspose", ["x", "k"], ["y"], name="up",
                              strides=[stride, stride]),
             helper.make_node("Flatten", ["y"], ["f"], name="flatten", axis=1),
             gemm("w", ["f", "w"], transB=1), softmax()], image(4, 6, 6),
            [base.weight("k", 4, 2, 3, 3), base.weight("w", 10, 8)]),
            f"ConvTranspose x1: strides [{stride}, {stride}] that give an image of more than "
            "2^40 elements from one of shape [4, 6, 6]", line=True)
    print("windows: zero, missing and oversized strides, dilations and kernels are named")


def check_initializers(folder):
    def with_weight(w):
        return model_bytes([gemm("w"), softmax()], features(4), [w])

    refused(folder, "declared_huge", with_weight(declared("w", [2 ** 62])),
            "initializer 'w' has shape [4611686018427387904]: expected at most 1073741824 "
            "elements, as many as a file of at most 1 GB holds")
    refused(folder, "declared_negative", with_weight(declared("w", [-(2 ** 62)])),
            "initializer 'w' has shape [-4611686018427387904]: expected dimensions of 0 or more")
    refused(folder, "declared_past_64_bits", with_weight(declared("w", [2 ** 40, 2 ** 40])),
            "initializer 'w' has shape [1099511627776, 1099511627776]: expected at most "
            "1073741824 elements, as many as a file of at most 1 GB holds")
    refused(folder, "declared_without_data", with_weight(declared("w", [4, 10])),
            "initializer 'w' holds 0 values for shape [4, 10]")
    # An int64 scalar without its value, which libonnx's shape inference of Range would read
    # past (the import fuzzer's finding): refused before inference runs.
    empty_step = TensorProto(name="step", data_type=TensorProto.INT64)
    bounds = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("a", 0), ("b", 3))]
    refused(folder, "int64_scalar_without_data", model_bytes(
        [helper.make_node("Range", ["a", "b", "step"], ["r"], name="range"), gemm("w"),
         softmax()], features(4), [*bounds, empty_step, array("w", np.ones((10, 4)))]),
            "initializer 'step' holds 0 values for shape []")
    half = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[10, 4], raw_data=b"\0" * 158)
    refused(folder, "raw_bytes_not_whole_values", with_weight(half),
            "initializer 'w' holds values of another size than its type's for shape [10, 4]")
    nan = np.ones((4, 10), np.float32)
    nan[1, 2] = np.nan
    refused(folder, "nan_weight", with_weight(array("w", nan)),
            "initializer 'w' holds nan at element 12: expected finite weights")
    inf = np.ones((4, 10), np.float32)
    inf[3, 9] = -np.inf
    refused(folder, "inf_weight", with_weight(array("w", inf)),
            "initializer 'w' holds -inf at element 39: expected finite weights")
    print("initializers: negative, huge and empty shapes, NaN and infinite weights are named")


def replaced_constant(nodes, name, value):
    return [base.constant(name, value, np.int64 if "shape" in name else np.float32)
            if n.name == name else n for n in nodes]


def attention_model(heads_shape, root_d):
    nodes, weights = base.attention_nodes("a/", "x", "y", 0)
    nodes = replaced_constant(nodes, "a/heads_shape", heads_shape)
    nodes = replaced_constant(nodes, "a/root_d", root_d)
    return model_bytes(
        nodes + [helper.make_node("Softmax", ["y"], ["probs"], name="end", axis=-1)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       ["N", base.SEQUENCE, base.HIDDEN])], weights,
        output_shape=("N", base.SEQUENCE, base.HIDDEN))


def check_attention(folder):
    """A refused attention is named by its cause, as any refused pattern."""
    refused(folder, "attention_head_size_0",
            attention_model([0, base.SEQUENCE, base.HIDDEN, 0], 1.0),
            "Softmax x1: an attention whose Reshape into heads names 8 heads of "
            "size 0 (expected both as counts from 1 up)", line=True)
    refused(folder, "attention_heads_short",
            attention_model([0, base.SEQUENCE, 4, 1], 1.0),
            "MatMul x1: an "
            "attention of 4 heads of size 1 over values of width 8 (expected heads x head size "
            "= width)", line=True)
    print("attention: a head size of 0 and heads that do not fill the width are named")


def check_keras_attention(folder):
    """A Keras MultiHeadAttention with key_dim 0 is refused, not imported with heads of no
    width."""
    import json
    with open(os.path.join(HERE, "..", "keras", "keras3_transformer_block.json")) as f:
        model = json.load(f)
    for layer in model["config"]["layers"]:
        if layer["class_name"] == "MultiHeadAttention":
            layer["config"]["key_dim"] = 0
    refused(folder, "keras_key_dim_0", json.dumps(model).encode(),
            "cannot import 1 layer(s), so nothing was written:\n  'attention' "
            "(MultiHeadAttention) at /config/layers/1: num_heads 4 and key_dim 0 (expected both "
            "from 1 up to 2^20)", suffix=".keras.json")
    print("keras attention: a key_dim of 0 is named")


def npy_member(shape_text, data=b""):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_text + ", }"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


def npz_bytes(members, compression=zipfile.ZIP_STORED):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def zip_bomb(declared_elements):
    """An archive of one deflated member whose header declares `declared_elements` floats and
    whose data is that many zero bytes: a few hundred kB that inflate to megabytes."""
    return npz_bytes([("conv2d/kernel.npy",
                       npy_member(f"({declared_elements},)", bytes(4 * declared_elements)))],
                     zipfile.ZIP_DEFLATED)


def check_npz(folder):
    for name, shape, why in [
            ("npz_shape_digits", "(99999999999999999999999,)",
             "has a dimension past 2^56 elements"),
            ("npz_shape_2_62", "(4611686018427387904,)", "has a dimension past 2^56 elements"),
            ("npz_shape_2_64", "(4294967296, 4294967296)", "holds more than 2^56 elements")]:
        refused(folder, name, npz_bytes([("conv2d/kernel.npy", npy_member(shape))]),
                f"member 'conv2d/kernel.npy': the shape {shape} {why}", suffix=".npz")
    refused(folder, "npz_short_data", npz_bytes([("conv2d/kernel.npy", npy_member("(1000,)"))]),
            "member 'conv2d/kernel.npy': expected 4000 bytes of array data for shape [1000], "
            "found 0", suffix=".npz")
    elements = 1 << 24
    refused(folder, "npz_bomb", zip_bomb(elements),
            f"member 'conv2d/kernel.npy' declares shape [{elements}] ({4 * elements} bytes), "
            "past the 1605792 bytes left of the 1605792 the model's weights and their optimizer "
            "state can take", suffix=".npz")
    kernel = struct.pack("<288f", *[0.0] * 5, float("nan"), *[0.0] * 282)
    refused(folder, "npz_nan", npz_bytes([("conv2d/kernel.npy", npy_member("(3, 3, 1, 32)", kernel))]),
            "array 'conv2d/kernel' holds nan at element 5: expected finite weights", suffix=".npz")
    print("npz: headers past 2^56 elements, short data and a zip bomb are refused before "
          "anything is inflated; a NaN weight is named")


def mutations(folder, count=200, seed=11):
    """Flips, truncates and overwrites bytes of a valid CNN; every import exits 0 or 2."""
    source = os.path.join(folder, "valid.onnx")
    base.cnn(source)
    with open(source, "rb") as f:
        valid = f.read()
    rng = random.Random(seed)
    mutant = os.path.join(folder, "mutant.onnx")
    config = os.path.join(folder, "mutant.json")
    codes = {0: 0, 2: 0}
    for i in range(count):
        data = bytearray(valid)
        for _ in range(rng.randint(1, 8)):
            kind = rng.random()
            at = rng.randrange(len(data))
            if kind < 0.6:
                data[at] = rng.randrange(256)
            elif kind < 0.8:
                data[at:at + 4] = struct.pack("<I", rng.choice([0, 1, 0x7f, 0xffffffff]))
            else:
                del data[at:at + rng.randint(1, 64)]
        with open(mutant, "wb") as f:
            f.write(data)
        result = run("import", mutant, "-o", config)
        if result.returncode not in codes:
            with open(os.path.join(folder, "..", f"mutant_{i}.onnx"), "wb") as f:
                f.write(data)
            sys.exit(f"mutation {i}: exit {result.returncode}\n{result.stderr}")
        codes[result.returncode] += 1
    print(f"mutations: {count} mutants of a valid CNN, {codes[0]} imported and {codes[2]} "
          "refused, none crashed")


def check_symlinked_weights_folder(folder):
    """A `<stem>.weights` link planted beside the config is refused, not written through."""
    source = os.path.join(folder, "linked.onnx")
    base.mlp(source)
    elsewhere = os.path.join(folder, "elsewhere")
    os.mkdir(elsewhere)
    link = os.path.join(folder, "linked.weights")
    os.symlink(elsewhere, link)
    config = os.path.join(folder, "linked.json")
    result = run("import", source, "-o", config)
    want = (f"error: {link}: cannot write the -o output: it is a symbolic link; ipusim writes "
            "into a folder of its own name, never through a link (remove the link or write the "
            "config elsewhere)\n")
    if result.returncode != 2 or result.stderr != want or os.path.exists(config) \
            or os.listdir(elsewhere):
        sys.exit(f"symlinked weights folder: exit {result.returncode}\n got: {result.stderr!r}\n"
                 f"want: {want!r}\n wrote: {os.listdir(elsewhere)}")


def check_repeated_names(folder):
    """Layer ids from repeated node names: `r`, `r_2`, ... in linear time, even for 5,000 nodes
    of one name (once a search over every layer for every suffix)."""
    count = 5000
    nodes = [helper.make_node("Relu", [f"h{i}" if i else "x"], [f"h{i + 1}"], name="r")
             for i in range(count)]
    nodes[2].name = "r_2"  # the third takes the name the second was given
    nodes += [helper.make_node("Gemm", [f"h{count}", "w", "b"], ["logits"], name="fc", transB=1),
              helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1)]
    weights = [array("w", np.zeros((10, 4), np.float32)), array("b", np.zeros(10, np.float32))]
    source = os.path.join(folder, "repeated.onnx")
    with open(source, "wb") as f:
        f.write(model_bytes(nodes, features(4), weights))
    config = os.path.join(folder, "repeated.json")
    result = run("import", source, "-o", config)
    if result.returncode != 0:
        sys.exit(f"repeated names: exit {result.returncode}\n{result.stderr}")
    with open(config) as f:
        ids = [layer["id"] for layer in json.load(f)["model"]["layers"]]
    want = ["input", "r", "r_2", "r_2_2"] + [f"r_{n}" for n in range(3, count)] + ["fc", "loss"]
    if ids != want:
        sys.exit(f"repeated names: ids {ids[:6]} ... {ids[-4:]}, expected {want[:6]} ... "
                 f"{want[-4:]}")


def check_format_rules(folder):
    """What onnx.checker refuses is refused, naming the node and the rule, not imported with a
    silent choice."""
    conv_gemm = lambda conv_attributes, gemm_attributes: model_bytes(
        [helper.make_node("Conv", ["x", "k"], ["y"], name="conv", **conv_attributes),
         helper.make_node("Flatten", ["y"], ["f"], name="flatten", axis=1),
         gemm("w", ["f", "w"], **gemm_attributes), softmax()], image(1, 4, 4),
        [base.weight("k", 2, 1, 3, 3), base.weight("w", 10, 8)])
    refused(folder, "misspelt_attribute", conv_gemm({"strideG": [2, 2]}, {"transB": 1}),
            "node 'conv' (Conv): unknown attribute 'strideG' (Conv takes 'auto_pad', "
            "'dilations', 'group', 'kernel_shape', 'pads' or 'strides'); did you mean 'strides'?")
    refused(folder, "huge_trans_b", conv_gemm({}, {"transB": 2 ** 62}),
            "node 'fc' (Gemm): attribute 'transB' is 4611686018427387904: expected 0 or 1")
    twice = model_bytes([gemm("w", ["x", "w"], transB=1), softmax()], features(4),
                        [base.weight("w", 10, 4), base.weight("w", 10, 4)])
    refused(folder, "duplicate_initializer", twice,
            "initializer 'w' is named twice: ONNX names each initializer once (which one a node "
            "reads would be a guess)")
    rewritten = model_bytes([helper.make_node("Relu", ["x"], ["r"], name="relu1"),
                             helper.make_node("Relu", ["x"], ["r"], name="relu2"),
                             gemm("w", ["r", "w"], transB=1), softmax()], features(4),
                            [base.weight("w", 10, 4)])
    refused(folder, "value_written_twice", rewritten,
            "node 'relu2' (Relu): its output 'r' is already a graph input, an initializer or "
            "another node's output (ONNX writes each value once)")
    minus_three = model_bytes(
        [helper.make_node("Reshape", ["x", "s"], ["f"], name="reshape"),
         gemm("w", ["f", "w"], transB=1), softmax()], image(2, 4, 4),
        [numpy_helper.from_array(np.array([1, -3], dtype=np.int64), "s"),
         base.weight("w", 10, 32)])
    refused(folder, "reshape_minus_three", minus_three,
            "Reshape x1: a Reshape to a size below -1 (ONNX takes -1, inferred, and 0, copied, "
            "and no other negative size)", line=True)
    print("format rules: a misspelt attribute, transB 2^62, a name given twice and a Reshape "
          "to -3 are refused")


def main():
    with tempfile.TemporaryDirectory() as folder:
        check_format_rules(folder)
        check_repeated_names(folder)
        check_symlinked_weights_folder(folder)
        check_nodes(folder)
        check_windows(folder)
        check_initializers(folder)
        check_attention(folder)
        check_keras_attention(folder)
        check_npz(folder)
        mutations(folder)


main()
