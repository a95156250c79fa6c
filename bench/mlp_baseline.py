#!/usr/bin/env python3
"""mlp_baseline.py — the speed baseline of the census training bench (issue 37,
goal 3): scikit-learn's MLPClassifier as a Python user would pick it
(Debian's python3-sklearn; not installed by scripts/install-deps.sh, the
bench skips it when missing) on one thread: hidden_layer_sizes (100, 70, 48,
34) (conf/census.json's dnn_hidden_units), batch_size 256, its defaults
otherwise (adam, lr 0.001, relu, alpha 1e-4, shuffle), random_state 42.
A fixed EPOCHS (default 4, conf/census.json's num_epochs): max_iter = EPOCHS,
early_stopping off and n_iter_no_change above max_iter, so tol never stops
it and every epoch runs (the ConvergenceWarning that follows is silenced).

Features: what a Python user would feed, the census CSV's 8 string columns
one-hot (OneHotEncoder, handle_unknown='ignore') and its 5 numeric columns
standardized (StandardScaler), fnlwgt unused as in conf/census.json. The
preprocessing (reading the CSVs, fitting and applying the encoders) is timed
apart from the fit. The inputs are float64, what the encoders give and so
what a user feeds without thinking of it; DTYPE float32 casts them first
(MLPClassifier then trains in float32, ~1.3x faster here). One thread:
OMP/OpenBLAS/MKL set to 1 before numpy is imported. Prints one line: the model's shape, the preprocessing CPU
seconds, the fit's wall and CPU seconds (time.process_time), examples/s of
the fit (examples x epochs / fit CPU seconds), accuracy and AUC on the
whole adult.test.csv.
  python3 bench/mlp_baseline.py TRAIN_CSV TEST_CSV [EPOCHS [DTYPE]]
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.metrics import accuracy_score, roc_auc_score  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402

NUMERIC = [0, 4, 10, 11, 12]             # age, education_num, capital_gain/loss, hours
CATEGORICAL = [1, 3, 5, 6, 7, 8, 9, 13]  # workclass ... native_country (fnlwgt unused)
HIDDEN = (100, 70, 48, 34)


def load(path):
    """Rows of PATH as (numeric float array, string array, 0/1 labels)."""
    num, cat, labels = [], [], []
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.rstrip("\n").split(",")]
            if len(cells) < 15:
                continue
            num.append([float(cells[i]) for i in NUMERIC])
            cat.append([cells[i] for i in CATEGORICAL])
            labels.append(1 if cells[14].rstrip(".") == ">50K" else 0)
    return np.array(num), np.array(cat), np.array(labels)


def features(train_path, test_path):
    """The dense float64 inputs of both files, encoders fitted on the training file."""
    ntr, ctr, ytr = load(train_path)
    nte, cte, yte = load(test_path)
    onehot = OneHotEncoder(handle_unknown="ignore", sparse_output=False)
    scale = StandardScaler()
    xtr = np.hstack([scale.fit_transform(ntr), onehot.fit_transform(ctr)])
    xte = np.hstack([scale.transform(nte), onehot.transform(cte)])
    return xtr, ytr, xte, yte


def main():
    epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    dtype = sys.argv[4] if len(sys.argv) > 4 else "float64"
    p0 = time.process_time()
    xtr, ytr, xte, yte = features(sys.argv[1], sys.argv[2])
    xtr, xte = xtr.astype(dtype), xte.astype(dtype)
    prep = time.process_time() - p0
    clf = MLPClassifier(hidden_layer_sizes=HIDDEN, batch_size=256, max_iter=epochs,
                        early_stopping=False, n_iter_no_change=epochs + 1,
                        random_state=42)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.process_time()
        w0 = time.time()
        clf.fit(xtr, ytr)
        cpu, wall = time.process_time() - t0, time.time() - w0
    p = clf.predict_proba(xte)[:, 1]
    weights = sum(w.size for w in clf.coefs_) + sum(b.size for b in clf.intercepts_)
    print("sklearn MLPClassifier %d -> %s -> 1 (%d weights, %s, adam, batch 256, %d epochs "
          "run %d): preprocessing cpu %.2fs; fit %d examples x %d epochs in %.2fs, cpu %.2fs "
          "(%.0f examples per CPU-second); accuracy = %.4f, auc = %.4f" %
          (xtr.shape[1], "-".join(str(h) for h in HIDDEN), weights, clf.coefs_[0].dtype, epochs, clf.n_iter_, prep,
           len(ytr), clf.n_iter_, wall, cpu, len(ytr) * clf.n_iter_ / cpu,
           accuracy_score(yte, p > 0.5), roc_auc_score(yte, p)))


if __name__ == "__main__":
    main()
