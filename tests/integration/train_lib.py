"""train_lib.py — what the training tests share: a job's evaluation metrics
(eval/metrics.jsonl), a checkpoint read by its documented layout
(trainer/trn_ckpt.c: magic, count, step, then per tensor its name, size,
slot count and values), the job's checkpoints in step order, and the
largest relative difference between two checkpoints' tensors."""
import array
import glob
import json
import os
import struct


def metrics(job):
    """Every evaluation line of job (eval/metrics.jsonl), oldest first."""
    with open(os.path.join(job, "eval", "metrics.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def ckpt(path):
    """The step and {name: [values, slot...]} of a model.ckpt-N."""
    with open(path, "rb") as f:
        b = f.read()
    assert b[:8] == b"PDCKPT\0\0"
    _, n, step = struct.unpack_from("<IIq", b, 8)
    o, out = 24, {}
    for _ in range(n):
        (ln,) = struct.unpack_from("<I", b, o)
        o += 4
        name = b[o:o + ln].decode()
        o += ln
        cnt, slots = struct.unpack_from("<QI", b, o)
        o += 12
        out[name] = []
        for _ in range(1 + slots):
            a = array.array("f")
            a.frombytes(b[o:o + 4 * cnt])
            o += 4 * cnt
            out[name].append(a)
    return step, out


def ckpts(job):
    """job's model.ckpt-N paths, by step."""
    return sorted(glob.glob(os.path.join(job, "model.ckpt-*")),
                  key=lambda p: int(p.rsplit("-", 1)[1]))


def worst_difference(c1, c2):
    """(largest |u - v| / max(1, |u|) over every value of two checkpoints'
    tensors and slots, the tensor's name); (1.0, why) when their tensors differ."""
    if set(c1) != set(c2):
        return 1.0, "tensors differ: %s" % sorted(set(c1) ^ set(c2))
    worst, where = 0.0, ""
    for name in c1:
        for x, y in zip(c1[name], c2[name]):
            if x.tobytes() == y.tobytes():
                continue
            for u, v in zip(x, y):
                d = abs(u - v) / max(1.0, abs(u))
                if d > worst:
                    worst, where = d, name
    return worst, where
