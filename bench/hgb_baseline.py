#!/usr/bin/env python3
"""hgb_baseline.py — the speed baseline of the BoostedTrees bench: scikit-learn's
HistGradientBoostingClassifier (Debian's python3-sklearn; not installed by
scripts/install-deps.sh, the bench skips it when missing) on the census data,
one core (run with OMP_NUM_THREADS=1). Defaults but 100 iterations (its own
default, as n_trees) and the categorical columns declared categorical.
Prints one line: fit seconds (wall and CPU), examples/s per tree and CPU
second, accuracy and AUC on the whole adult.test.csv.
  OMP_NUM_THREADS=1 python3 bench/hgb_baseline.py TRAIN_CSV TEST_CSV
"""
import sys
import time

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import accuracy_score, roc_auc_score

NUMERIC = [0, 4, 10, 11, 12]          # age, education_num, capital_gain/loss, hours
CATEGORICAL = [1, 3, 5, 6, 7, 8, 9, 13]  # workclass ... native_country (fnlwgt unused)


def load(path, vocab):
    rows, labels = [], []
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.rstrip("\n").split(",")]
            if len(cells) < 15:
                continue
            x = [float(cells[i]) for i in NUMERIC]
            for i in CATEGORICAL:
                v = vocab.setdefault(i, {})
                x.append(float(v.setdefault(cells[i], len(v))))
            rows.append(x)
            labels.append(1 if cells[14].rstrip(".") == ">50K" else 0)
    return np.array(rows), np.array(labels)


def main():
    vocab = {}
    xtr, ytr = load(sys.argv[1], vocab)
    xte, yte = load(sys.argv[2], vocab)
    cat = [False] * len(NUMERIC) + [True] * len(CATEGORICAL)
    clf = HistGradientBoostingClassifier(max_iter=100, categorical_features=cat,
                                         early_stopping=False, random_state=42)
    t0 = time.process_time()
    w0 = time.time()
    clf.fit(xtr, ytr)
    cpu, wall = time.process_time() - t0, time.time() - w0
    p = clf.predict_proba(xte)[:, 1]
    print("sklearn HistGradientBoostingClassifier: 100 trees from %d examples in %.2fs, "
          "cpu %.2fs (%.0f examples/s per tree and cpu second); accuracy = %.4f, auc = %.4f" %
          (len(ytr), wall, cpu, len(ytr) * 100 / cpu, accuracy_score(yte, p > 0.5),
           roc_auc_score(yte, p)))


if __name__ == "__main__":
    main()
