"""custom_numpy_ref.py — an independent forward pass of a custom model graph
(tests/integration/test_train_custom), in numpy (float64), over an export's
weights: the tensor index decoded by hand from model.pb (ModelDef.tensors,
field 11: TensorInfo name 1, shape 3, offset 4, length 5) and the bytes read
from variables.bin by docs/export-format.md's layout. Reads the graph from
the spec, not from the export. Handles the node kinds and feature columns
test_train_custom's graph uses (batch_norm with its moving statistics; numeric with normalizer, indicator and
embedding of vocabulary lists, a linear block of vocabulary lists).
  custom_numpy_ref.py EXPORT SPEC.json INSTANCES.jsonl   -> JSON list of logits
Not executable: tests/run.sh does not run it.
"""
import json
import math
import os
import struct
import sys

import numpy as np


def pb_fields(buf):
    """(field number, wire type, value) of a protobuf message, by hand."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        fn, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            ln, i = varint(buf, i)
            v = buf[i:i + ln]
            i += ln
        elif wt == 5:
            v = buf[i:i + 4]
            i += 4
        elif wt == 1:
            v = buf[i:i + 8]
            i += 8
        else:
            raise ValueError("wire type %d" % wt)
        yield fn, wt, v


def varint(buf, i):
    r = s = 0
    while True:
        b = buf[i]
        i += 1
        r |= (b & 0x7F) << s
        s += 7
        if b < 0x80:
            return r, i


def read_tensors(export):
    """{name: (shape, floats)} from model.pb's ModelDef.tensors (field 11:
    TensorInfo name 1, shape 3, offset 4, length 5) and variables.bin."""
    with open(os.path.join(export, "model.pb"), "rb") as f:
        pb = f.read()
    with open(os.path.join(export, "variables.bin"), "rb") as f:
        var = f.read()
    assert var[:8] == b"PDVARS\0\0"
    out = {}
    for fn, wt, v in pb_fields(pb):
        if fn != 11:
            continue
        name, shape, off, ln = None, [], 0, 0
        for f2, w2, v2 in pb_fields(v):
            if f2 == 1:
                name = v2.decode()
            elif f2 == 3 and w2 == 2:
                j = 0
                while j < len(v2):
                    d, j = varint(v2, j)
                    shape.append(d)
            elif f2 == 3:
                shape.append(v2)
            elif f2 == 4:
                off = v2
            elif f2 == 5:
                ln = v2
        out[name] = (shape, struct.unpack("<%df" % (ln // 4), var[off:off + ln]))
    return out


def numpy_check(E2, spec, instances):
    T = {k: (s, np.array(v, dtype=np.float64).reshape(s)) for k, (s, v) in
         read_tensors(E2).items()}
    fcs = {fc.get("name", fc.get("key")): fc for fc in spec["feature_columns"]}

    def vocab_id(col, x):
        voc = fcs[col]["vocabulary_list"]
        x = x.strip()
        return voc.index(x) if x in voc else -1

    def dense_value(col, inst):
        fc = fcs[col]
        if fc["type"] == "numeric_column":
            nz = fc["normalizer"]
            return [(inst[fc["key"]] - nz["mean"]) / nz["std"]]
        if fc["type"] == "indicator_column":
            src = fc["categorical_column"]
            v = [0.0] * len(fcs[src]["vocabulary_list"])
            i = vocab_id(src, inst[fcs[src]["key"]])
            if i >= 0:
                v[i] = 1.0
            return v
        if fc["type"] == "embedding_column":
            src = fc["categorical_column"]
            i = vocab_id(src, inst[fcs[src]["key"]])
            t = T["dnn/input_from_feature_columns/%s/embedding_weights" % col][1]
            return list(t[i]) if i >= 0 else [0.0] * fc["dimension"]
        raise ValueError(col)

    erf = np.vectorize(math.erf)

    def act(a, z, alpha=0.2):
        if a == "relu":
            return np.maximum(z, 0)
        if a == "relu6":
            return np.clip(z, 0, 6)
        if a == "elu":
            return np.where(z > 0, z, np.expm1(z))
        if a == "selu":
            return 1.0507009873554805 * np.where(z > 0, z, 1.6732632423543772 * np.expm1(z))
        if a == "tanh":
            return np.tanh(z)
        if a == "sigmoid":
            return 1 / (1 + np.exp(-z))
        if a == "softplus":
            return np.log1p(np.exp(z))
        if a == "leaky_relu":
            return np.where(z > 0, z, alpha * z)
        if a == "gelu":
            return 0.5 * z * (1 + erf(z / math.sqrt(2)))
        if a in ("swish", "silu"):
            return z / (1 + np.exp(-z))
        return z

    model = spec["estimator"]["model"]
    deep_cols = model["inputs"][0]["columns"]
    layers = model["layers"]
    logits = []
    for inst in instances:
        v = {}
        # input_layer: its columns sorted by name, as TensorFlow's
        v["deep"] = np.array(sum((dense_value(c, inst) for c in sorted(deep_cols)), []))
        w = T["linear/linear_model/bias_weights"][1].copy()
        for c in spec["estimator"]["model"]["inputs"][1]["columns"]:
            i = vocab_id(c, inst[fcs[c]["key"]])
            if i >= 0:
                w = w + T["linear/linear_model/%s/weights" % c][1][i]
        v["wide"] = w
        for L in layers:
            t = L["type"]
            xs = [v[i] for i in L.get("inputs", [])]
            if t == "embedding":
                v[L["name"]] = np.array(dense_value(L["column"], inst))
            elif t == "concat":
                v[L["name"]] = np.concatenate(xs)
            elif t == "dense":
                z = xs[0] @ T[L["name"] + "/kernel"][1] + T[L["name"] + "/bias"][1]
                v[L["name"]] = act(L.get("activation", "linear"), z)
            elif t == "dropout":
                v[L["name"]] = xs[0]
            elif t == "batch_norm":
                nm = L["name"]
                v[nm] = (T[nm + "/gamma"][1] * (xs[0] - T[nm + "/moving_mean"][1]) /
                         np.sqrt(T[nm + "/moving_variance"][1] + L.get("epsilon", 0.001)) +
                         T[nm + "/beta"][1])
            elif t == "activation":
                v[L["name"]] = act(L["activation"], xs[0], L.get("alpha", 0.2))
            elif t == "add":
                v[L["name"]] = sum(xs)
            elif t == "multiply":
                v[L["name"]] = xs[0] * xs[1]
        logits.append(float(v["logits"][0]))
    return logits




if __name__ == "__main__":
    with open(sys.argv[2]) as f:
        spec_ = json.load(f)
    with open(sys.argv[3]) as f:
        inst_ = [json.loads(x) for x in f if x.strip()]
    print(json.dumps(numpy_check(sys.argv[1], spec_, inst_)))
