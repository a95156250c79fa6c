#!/usr/bin/env python3
"""xgb_baseline.py — the speed baseline of bench group 21 (issue 39): the census
XGBoost model of docs/models-from-elsewhere.md (binary:logistic, hist, 100 trees of
depth 6, 5 numeric and 3 categorical columns) trained with Debian's python3-xgboost,
and XGBoost's own Booster.predict on one thread timed on it.

  python3 bench/xgb_baseline.py train OUT_DIR   writes OUT_DIR/m/1/{model.json,
      serving.json}, OUT_DIR/rows-1000.json ({"instances": the first 1000 rows of
      adult.test.csv}), OUT_DIR/one.json (the first of them) and
      OUT_DIR/margin.npy (predict(output_margin=True) of the 1000)
  python3 bench/xgb_baseline.py time OUT_DIR RUNS   prints one JSON line:
      Booster.predict (nthread=1) on the 1000 rows, CPU seconds per call for RUNS
      calls, each on a new DMatrix (XGBoost caches a DMatrix's predictions: the same
      one twice answers from its cache); instances per CPU-second of the median and
      of the fastest call
"""
import json
import os
import sys
import time

import numpy as np
import pandas as pd
import xgboost as xgb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLS = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
        "occupation", "relationship", "race", "gender", "capital_gain", "capital_loss",
        "hours_per_week", "native_country", "income_bracket"]
NUMERIC = ["age", "education_num", "capital_gain", "capital_loss", "hours_per_week"]
CATEGORICAL = ["workclass", "occupation", "gender"]


def read(name, nrows=None):
    return pd.read_csv(os.path.join(ROOT, "data", "census", name), names=COLS,
                       skipinitialspace=True, nrows=nrows)


def frame(df, cats):
    x = df[NUMERIC + CATEGORICAL].copy()
    for c in CATEGORICAL:
        x[c] = pd.Categorical(df[c], categories=cats[c])
    return x


def train(out):
    df = read("adult.data.csv")
    cats = {c: list(df[c].astype("category").cat.categories) for c in CATEGORICAL}
    y = (df.income_bracket == ">50K").astype(int)
    b = xgb.train({"objective": "binary:logistic", "tree_method": "hist", "max_depth": 6,
                   "eta": 0.3, "nthread": 1},
                  xgb.DMatrix(frame(df, cats), label=y, enable_categorical=True),
                  num_boost_round=100)
    d = os.path.join(out, "m", "1")
    os.makedirs(d, exist_ok=True)
    b.save_model(os.path.join(d, "model.json"))
    with open(os.path.join(d, "serving.json"), "w") as f:
        json.dump({"categories": cats, "classes": ["<=50K", ">50K"]}, f)
    with open(os.path.join(out, "categories.json"), "w") as f:
        json.dump(cats, f)
    t = read("adult.test.csv", 1000)
    inst = [{k: (float(getattr(r, k)) if k in NUMERIC else getattr(r, k))
             for k in NUMERIC + CATEGORICAL} for r in t.itertuples(index=False)]
    with open(os.path.join(out, "rows-1000.json"), "w") as f:
        json.dump({"instances": inst}, f)
    with open(os.path.join(out, "one.json"), "w") as f:
        json.dump(inst[0], f)
    dm = xgb.DMatrix(frame(t, cats), enable_categorical=True)
    np.save(os.path.join(out, "margin.npy"), b.predict(dm, output_margin=True))


def timing(out, runs):
    with open(os.path.join(out, "categories.json")) as f:
        cats = json.load(f)
    x = frame(read("adult.test.csv", 1000), cats)
    b = xgb.Booster(model_file=os.path.join(out, "m", "1", "model.json"))
    b.set_param({"nthread": 1})
    b.predict(xgb.DMatrix(x, enable_categorical=True, nthread=1))  # warm up
    secs = []
    for _ in range(runs):
        dm = xgb.DMatrix(x, enable_categorical=True, nthread=1)
        c0 = time.process_time()
        b.predict(dm)
        secs.append(time.process_time() - c0)
    secs.sort()
    med = secs[len(secs) // 2]
    print(json.dumps({"xgboost": xgb.__version__, "calls": runs, "rows": len(x),
                      "cpu_s_per_call_median": med,
                      "instances_per_cpu_s": len(x) / med if med > 0 else None,
                      "instances_per_cpu_s_fastest": len(x) / secs[0] if secs[0] > 0 else None}))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "train":
        train(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "time":
        timing(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)
