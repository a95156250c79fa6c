#!/usr/bin/env python3
"""optim_ref.py — an independent computation of TensorFlow's RMSProp and
ProximalAdagrad updates (the formulas of tf.raw_ops.ApplyRMSProp,
ApplyCenteredRMSProp and ApplyProximalAdagrad, in float32 arithmetic: every
operation rounded to float32, as TF's float kernels), and of the learning-rate
decay schedules of tf.compat.v1.train (exponential_decay, cosine_decay,
polynomial_decay, in double). Prints the known answers test_trn_optim.c
holds; run it to regenerate them: python3 tests/unit/support/optim_ref.py
"""
import math
import struct


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


W0 = [0.5, -0.25, 0.0, 1.0, 0.02]
GRADS = [[0.1, -0.2, 0.0, 0.4, 0.01], [0.3, 0.0, 0.0, -0.1, 0.0], [-0.2, 0.05, 0.0, 0.4, -0.01]]
N = len(W0)


def rmsprop(lr, decay, momentum, eps, centered):
    w = [f32(x) for x in W0]
    ms = [1.0] * N
    mom = [0.0] * N
    mg = [0.0] * N
    one_rho = f32(1.0 - f32(decay))
    lr, momentum, eps = f32(lr), f32(momentum), f32(eps)
    for g in GRADS:
        for k in range(N):
            gk = f32(g[k])
            ms[k] = f32(ms[k] + f32(f32(f32(gk * gk) - ms[k]) * one_rho))
            denom = ms[k]
            if centered:
                mg[k] = f32(mg[k] + f32(f32(gk - mg[k]) * one_rho))
                denom = f32(denom - f32(mg[k] * mg[k]))
            mom[k] = f32(f32(mom[k] * momentum) + f32(f32(gk * lr) / f32(math.sqrt(f32(denom + eps)))))
            w[k] = f32(w[k] - mom[k])
    return w, ms, mom, mg


def proximal_adagrad(lr, init, l1, l2):
    w = [f32(x) for x in W0]
    acc = [f32(init)] * N
    lr, l1, l2 = f32(lr), f32(l1), f32(l2)
    for g in GRADS:
        for k in range(N):
            gk = f32(g[k])
            acc[k] = f32(acc[k] + f32(gk * gk))
            r = f32(lr / f32(math.sqrt(acc[k])))
            v = f32(w[k] - f32(gk * r))
            if l1 > 0:
                mag = max(f32(abs(v) - f32(r * l1)), 0.0)
                s = mag if v > 0 else -mag if v < 0 else 0.0
                w[k] = f32(s / f32(1.0 + f32(r * l2)))
            else:
                w[k] = f32(v / f32(1.0 + f32(r * l2)))
    return w, acc


def exponential_decay(lr, step, decay_steps, decay_rate, staircase):
    p = step / decay_steps
    if staircase:
        p = math.floor(p)
    return lr * decay_rate ** p


def cosine_decay(lr, step, decay_steps, alpha):
    step = min(step, decay_steps)
    cos = 0.5 * (1 + math.cos(math.pi * step / decay_steps))
    return lr * ((1 - alpha) * cos + alpha)


def polynomial_decay(lr, step, decay_steps, end, power, cycle):
    if cycle:
        mult = 1.0 if step == 0 else math.ceil(step / decay_steps)
        decay_steps = decay_steps * mult
    else:
        step = min(step, decay_steps)
    return (lr - end) * (1 - step / decay_steps) ** power + end


def show(name, xs):
    print("    /* %s */ {%s}," % (name, ", ".join("%.9g" % x for x in xs)))


if __name__ == "__main__":
    w, ms, mom, _ = rmsprop(0.01, 0.9, 0.0, 1e-10, False)
    print("RMSProp(0.01) defaults:")
    show("w", w); show("rms", ms); show("momentum", mom)
    w, ms, mom, mg = rmsprop(0.01, 0.8, 0.5, 1e-10, True)
    print("RMSProp(0.01, decay 0.8, momentum 0.5, centered):")
    show("w", w); show("rms", ms); show("momentum", mom); show("mg", mg)
    w, acc = proximal_adagrad(0.1, 0.1, 0.0, 0.0)
    print("ProximalAdagrad(0.1):")
    show("w", w); show("accumulator", acc)
    w, acc = proximal_adagrad(0.1, 0.1, 0.05, 0.2)
    print("ProximalAdagrad(0.1, l1 0.05, l2 0.2):")
    show("w", w); show("accumulator", acc)
    print("exponential_decay(0.1, s, 100, 0.96, staircase F/T) at 0, 50, 150, 1000:")
    show("smooth", [exponential_decay(0.1, s, 100, 0.96, False) for s in (0, 50, 150, 1000)])
    show("staircase", [exponential_decay(0.1, s, 100, 0.96, True) for s in (0, 50, 150, 1000)])
    print("cosine_decay(0.1, s, 1000, alpha 0 / 0.1) at 0, 250, 500, 1000, 2000:")
    show("alpha 0", [cosine_decay(0.1, s, 1000, 0.0) for s in (0, 250, 500, 1000, 2000)])
    show("alpha 0.1", [cosine_decay(0.1, s, 1000, 0.1) for s in (0, 250, 500, 1000, 2000)])
    print("polynomial_decay(0.1, s, 1000, 0.01, power 2, cycle F/T) at 0, 500, 1000, 1500:")
    show("no cycle", [polynomial_decay(0.1, s, 1000, 0.01, 2.0, False) for s in (0, 500, 1000, 1500)])
    show("cycle", [polynomial_decay(0.1, s, 1000, 0.01, 2.0, True) for s in (0, 500, 1000, 1500)])
