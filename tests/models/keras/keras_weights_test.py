#!/usr/bin/python3
"""ipusim import of Keras models with their weights from an .npz beside the JSON (or named by
--weights): the seeds' Keras CNN with tf.keras 2 names ("conv2d/kernel:0") and a Keras 3
transformer block with Keras 3 paths ("attention/query/kernel", head axes kept), and Keras 3's
grouped, depthwise and transposed convolutions, crop and group norm. The weights
are drawn here with numpy and saved with numpy.savez, as a Keras user would save
model.weights. Each import's first training step starts from them: the loss ipusim saves
equals the loss numpy computes from the same weights on the same samples. Dropout is set to 0
in the imported configs so that numpy's forward is the same function.

    tests/models/keras/keras_weights_test.py IPUSIM
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

IPUSIM = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(11)
MICRO_BATCH = 4


def draw(*shape):
    fan_in = np.prod(shape[:-1]) if len(shape) > 1 else shape[0]
    return (RNG.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


def run(*args, expect=0):
    result = subprocess.run([IPUSIM, *args], capture_output=True, text=True)
    if result.returncode != expect:
        sys.exit(f"ipusim {' '.join(args)}: exit {result.returncode}, expected {expect}\n"
                 f"{result.stdout}{result.stderr}")
    return result


def cross_entropy(logits, labels):
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -log_probs[np.arange(len(labels)), labels].mean()


def conv_valid(x, k, b):
    """Channels-last valid convolution: x [n, h, w, c], k [kh, kw, c, o]."""
    kh, kw = k.shape[:2]
    out_h, out_w = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    y = np.zeros((len(x), out_h, out_w, k.shape[3]))
    for i in range(kh):
        for j in range(kw):
            y += x[:, i:i + out_h, j:j + out_w, :] @ k[i, j]
    return y + b


def pool(x):
    n, h, w, c = x.shape
    return x[:, :h // 2 * 2, :w // 2 * 2].reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def cnn_weights():
    return {"conv2d/kernel:0": draw(3, 3, 1, 32), "conv2d/bias:0": draw(32),
            "conv2d_1/kernel:0": draw(3, 3, 32, 64), "conv2d_1/bias:0": draw(64),
            "dense/kernel:0": draw(1600, 10), "dense/bias:0": draw(10)}


def cnn_logits(w, x):
    y = pool(np.maximum(conv_valid(x, w["conv2d/kernel:0"], w["conv2d/bias:0"]), 0))
    y = pool(np.maximum(conv_valid(y, w["conv2d_1/kernel:0"], w["conv2d_1/bias:0"]), 0))
    return y.reshape(len(y), -1) @ w["dense/kernel:0"] + w["dense/bias:0"]


def block_weights():
    w = {}
    for name in ["query", "key", "value"]:
        w[f"attention/{name}/kernel"] = draw(32, 4, 8)
        w[f"attention/{name}/bias"] = draw(4, 8)
    w["attention/attention_output/kernel"] = draw(4, 8, 32)
    w["attention/attention_output/bias"] = draw(32)
    w["norm/gamma"] = (1 + 0.1 * RNG.standard_normal(32)).astype(np.float32)
    w["norm/beta"] = draw(32)
    w["ffn/kernel"], w["ffn/bias"] = draw(32, 64), draw(64)
    w["ffn_out/kernel"], w["ffn_out/bias"] = draw(64, 32), draw(32)
    w["bn/gamma"], w["bn/beta"] = draw(512), draw(512)
    w["bn/moving_mean"] = draw(512)
    w["bn/moving_variance"] = (1 + RNG.random(512)).astype(np.float32)
    w["logits/kernel"], w["logits/bias"] = draw(512, 5), draw(5)
    return w


def block_logits(w, x):
    """Keras 3's MultiHeadAttention: einsum projections keeping a head axis."""
    q, k, v = (np.einsum("bsh,hnd->bnsd", x, w[f"attention/{n}/kernel"])
               + w[f"attention/{n}/bias"][None, :, None, :] for n in ["query", "key", "value"])
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(8)
    probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    context = probs @ v
    attended = (np.einsum("bnsd,ndh->bsh", context, w["attention/attention_output/kernel"])
                + w["attention/attention_output/bias"])
    r = x + attended
    mean = r.mean(axis=-1, keepdims=True)
    normed = ((r - mean) / np.sqrt(r.var(axis=-1, keepdims=True) + 1e-6) * w["norm/gamma"]
              + w["norm/beta"])
    h = normed @ w["ffn/kernel"] + w["ffn/bias"]
    h = 0.5 * h * (1 + np.vectorize(math.erf)(h / np.sqrt(2)))
    f = (h @ w["ffn_out/kernel"] + w["ffn_out/bias"]).reshape(len(x), -1)
    bn = (f - f.mean(axis=0)) / np.sqrt(f.var(axis=0) + 1e-3) * w["bn/gamma"] + w["bn/beta"]
    return bn @ w["logits/kernel"] + w["logits/bias"]


def without_dropout(config):
    with open(config) as f:
        document = json.load(f)
    for layer in document["model"]["layers"]:
        if layer["type"] == "dropout":
            layer["rate"] = 0.0
        if layer["type"] == "attention":
            layer["dropout"] = 0.0
    with open(config, "w") as f:
        json.dump(document, f)


def first_loss(folder, name, config, weights, logits_of, expected_parameters):
    without_dropout(config)
    saved = os.path.join(folder, name + "_run")
    out = run("train", config, "--steps", "1", "--test-samples", "0", "--save", saved,
              "--micro-batch", str(MICRO_BATCH), "--gac", "4").stdout
    inputs = np.load(os.path.join(saved, "inputs.npy"))[:MICRO_BATCH].astype(np.float64)
    labels = np.load(os.path.join(saved, "labels.npy"))[:MICRO_BATCH]
    ipusim_loss = float(np.load(os.path.join(saved, "losses.npy"))[0, 0])
    numpy_loss = cross_entropy(logits_of({k: v.astype(np.float64) for k, v in weights.items()},
                                         inputs), labels)
    if abs(ipusim_loss - numpy_loss) > 1e-5 * abs(numpy_loss):
        sys.exit(f"{name}: first loss {ipusim_loss} in ipusim, {numpy_loss} in numpy\n{out}")
    print(f"{name}: {expected_parameters:,} trainable parameters, first loss {ipusim_loss:.6f} "
          f"(numpy {numpy_loss:.6f})")


def check_cnn(folder):
    """The .npz beside the JSON is found without --weights."""
    source = os.path.join(folder, "keras_cnn.json")
    shutil.copy(os.path.join(HERE, "keras_cnn.json"), source)
    weights = cnn_weights()
    np.savez(os.path.join(folder, "keras_cnn.npz"), **weights)
    config = os.path.join(folder, "cnn.json")
    out = run("import", source, "-o", config).stdout
    expected = (f"34,826 trainable parameters, 0 non-trainable (batch-norm moving statistics); "
                f"wrote {config} and its initial weights from {folder}/keras_cnn.npz in "
                f"{folder}/cnn.weights/\n")
    if not out.endswith(expected):
        sys.exit(f"keras cnn import: {out!r}")
    first_loss(folder, "keras_cnn", config, weights, cnn_logits, 34826)


def check_block(folder):
    """--weights names the file; Keras 3 paths; the batch norm's moving statistics come along;
    an array no layer takes is listed as not imported."""
    npz = os.path.join(folder, "block_weights.npz")
    weights = block_weights()
    np.savez(npz, **weights, **{"optimizer/iterations": np.zeros(1, np.float32)})
    config = os.path.join(folder, "block.json")
    out = run("import", os.path.join(HERE, "keras3_transformer_block.json"), "-o", config,
              "--weights", npz).stdout
    expected = (f"not imported from {npz}: 'optimizer/iterations' (no layer of the model takes "
                "them)\n")
    if not out.endswith(expected):
        sys.exit(f"keras block import: {out!r}")
    for name in ["moving_mean", "moving_variance"]:
        written = np.load(os.path.join(folder, "block.weights", f"bn.{name}.initial.npy"))
        if not np.array_equal(written, weights["bn/" + name]):
            sys.exit(f"bn.{name} was not imported as the file holds it")
    trainable = sum(v.size for k, v in weights.items() if "moving" not in k)
    first_loss(folder, "keras3_block", config, weights, block_logits, trainable)


def check_logits(folder):
    """A model whose last Dense has no activation (compiled with from_logits=True) imports with
    a loss appended, noted, and trains from the file's weights as numpy computes."""
    with open(os.path.join(HERE, "keras_cnn.json")) as f:
        document = json.load(f)
    document["config"]["layers"][-1]["config"]["activation"] = "linear"
    source = os.path.join(folder, "keras_logits.json")
    with open(source, "w") as f:
        json.dump(document, f)
    weights = cnn_weights()
    np.savez(os.path.join(folder, "keras_logits.npz"), **weights)
    config = os.path.join(folder, "logits.json")
    out = run("import", source, "-o", config).stdout
    expected = ("note: the model ends in logits (layer 'dense', Dense without an activation); the "
                "import appends a softmax_cross_entropy loss, as a loss with from_logits=True "
                "applies it\n")
    if not out.endswith(expected):
        sys.exit(f"keras logits import: {out!r}")
    first_loss(folder, "keras_logits", config, weights, cnn_logits, 34826)


def check_refusals(folder):
    npz = os.path.join(folder, "partial.npz")
    weights = cnn_weights()
    del weights["dense/bias:0"]
    weights["dense/kernel:0"] = draw(10, 1600)
    np.savez(npz, **weights)
    source = os.path.join(HERE, "keras_cnn.json")
    config = os.path.join(folder, "refused.json")
    err = run("import", source, "-o", config, "--weights", npz, expect=2).stderr
    expected = (f"error: {npz}: has no array for 'dense/bias'; name them <layer>/<weight> as "
                "Keras 3's w.path does, or <layer>/<weight>:0 as tf.keras' w.name does\n")
    if err != expected or os.path.exists(config):
        sys.exit(f"missing array: {err!r}")
    weights["dense/bias:0"] = draw(10)
    np.savez(npz, **weights)
    err = run("import", source, "-o", config, "--weights", npz, expect=2).stderr
    expected = (f"error: {npz}: the weights of layer 'dense' do not fit it: dense.kernel is "
                "[10, 1600] in the file and [1600, 10] in the imported model; nothing was "
                "written\n")
    if err != expected or os.path.exists(config) or os.path.exists(
            os.path.join(folder, "refused.weights")):
        sys.exit(f"misshapen array: {err!r}")
    garbage = os.path.join(folder, "garbage.npz")
    with open(garbage, "wb") as f:
        f.write(b"PK\x03\x04 not really a zip")
    err = run("import", source, "-o", config, "--weights", garbage, expect=2).stderr
    if not err.startswith(f"error: {garbage}: not an .npz archive of numpy arrays: "):
        sys.exit(f"garbage npz: {err!r}")
    print("refusals: a missing array, a misshapen one and a file that is no .npz are named")


def family_layer(class_name, name, **config):
    return {"class_name": class_name, "config": {"name": name, **config}}


def family_model():
    """Keras 3's convolution family as to_json() writes it: a grouped Conv2D, a DepthwiseConv2D
    (its channels in build_config), a Conv2DTranspose of a kernel wider than its stride,
    Cropping2D, GroupNormalization, pooling and classes."""
    layers = [
        family_layer("InputLayer", "images", batch_shape=[None, 8, 8, 4]),
        family_layer("Conv2D", "grouped", filters=4, kernel_size=[3, 3], strides=[1, 1],
                     padding="valid", groups=2, activation="relu", use_bias=True),
        family_layer("DepthwiseConv2D", "dw", kernel_size=[3, 3], strides=[1, 1],
                     padding="valid", depth_multiplier=1, activation="linear", use_bias=True,
                     build_config={"input_shape": [None, 6, 6, 4]}),
        family_layer("Conv2DTranspose", "up", filters=4, kernel_size=[3, 3], strides=[2, 2],
                     padding="valid", output_padding=None, activation="linear", use_bias=True),
        family_layer("Cropping2D", "crop", cropping=[[1, 0], [0, 1]]),
        family_layer("GroupNormalization", "norm", groups=2, axis=-1, epsilon=1e-3),
        family_layer("GlobalAveragePooling2D", "gap"),
        family_layer("Dense", "out", units=5, activation="softmax"),
    ]
    return {"class_name": "Sequential", "keras_version": "3.3.3",
            "config": {"name": "family", "layers": layers}}


def family_weights():
    return {"grouped/kernel": draw(3, 3, 2, 4), "grouped/bias": draw(4),
            "dw/depthwise_kernel": draw(3, 3, 4, 1), "dw/bias": draw(4),
            "up/kernel": draw(3, 3, 4, 4), "up/bias": draw(4),
            "norm/gamma": (1 + 0.1 * RNG.standard_normal(4)).astype(np.float32),
            "norm/beta": draw(4), "out/kernel": draw(4, 5), "out/bias": draw(5)}


def family_logits(w, x):
    k = w["grouped/kernel"]
    y = np.concatenate([conv_valid(x[..., 2 * g:2 * g + 2], k[..., 2 * g:2 * g + 2],
                                   w["grouped/bias"][2 * g:2 * g + 2]) for g in range(2)], -1)
    y = np.maximum(y, 0)
    d = w["dw/depthwise_kernel"][..., 0]  # [kh, kw, C]: each channel its own 3x3
    y = sum(y[:, i:i + 4, j:j + 4, :] * d[i, j] for i in range(3) for j in range(3)) + w["dw/bias"]
    up = np.zeros((len(y), 9, 9, 4))  # Keras' valid: 4 x 2 + max(3 - 2, 0) rows
    for a in range(4):
        for b in range(4):  # pixel (a, b) adds its taps at (2a + i, 2b + j); kernel [i, j, f, c]
            up[:, 2 * a:2 * a + 3, 2 * b:2 * b + 3, :] += np.einsum(
                "nc,ijfc->nijf", y[:, a, b], w["up/kernel"])
    y = (up + w["up/bias"])[:, 1:, :-1]
    g = y.reshape(len(y), 8, 8, 2, 2)
    g = (g - g.mean(axis=(1, 2, 4), keepdims=True)) / np.sqrt(
        g.var(axis=(1, 2, 4), keepdims=True) + 1e-3)
    y = g.reshape(y.shape) * w["norm/gamma"] + w["norm/beta"]
    return y.mean(axis=(1, 2)) @ w["out/kernel"] + w["out/bias"]


def check_family(folder):
    """Keras 3 paths; the depthwise kernel [3, 3, 4, 1] read as conv2d's [3, 3, 1, 4]."""
    source = os.path.join(folder, "keras_family.json")
    with open(source, "w") as f:
        json.dump(family_model(), f)
    weights = family_weights()
    np.savez(os.path.join(folder, "keras_family.npz"), **weights)
    config = os.path.join(folder, "family.json")
    run("import", source, "-o", config)
    first_loss(folder, "keras_family", config, weights, family_logits,
               sum(v.size for v in weights.values()))


def main():
    with tempfile.TemporaryDirectory() as folder:
        check_cnn(folder)
        check_block(folder)
        check_logits(folder)
        check_family(folder)
        check_refusals(folder)


main()
