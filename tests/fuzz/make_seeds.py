#!/usr/bin/env python3
"""make_seeds.py — writes the seed inputs of every fuzz target into
tests/fuzz/corpus/<target>/seed_*, from real project data: census rows
(data/census/), the census instance (data/census/test.json), the fuzzing
model (tests/fuzz/model/), the bad-export corpus (tests/data/bad_exports/),
the example configs and specs (conf/, tests/data/specs/).

Run from anywhere: python3 tests/fuzz/make_seeds.py. Seeds are rewritten,
other corpus files (fuzzer finds) are left alone. Standard library only.
"""
import base64
import json
import os
import struct

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
MODEL = os.path.join(ROOT, "tests", "fuzz", "model")

COLUMNS = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
           "occupation", "relationship", "race", "gender", "capital_gain", "capital_loss",
           "hours_per_week", "native_country", "income_bracket"]
NUMERIC = {"age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week"}


def read(*parts, mode="r"):
    with open(os.path.join(ROOT, *parts), mode) as f:
        return f.read()


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed_" + name), "wb") as f:
        f.write(data)


def census_rows(n, path="adult.test.csv"):
    rows = []
    with open(os.path.join(ROOT, "data", "census", path)) as f:
        for line in f:
            if line.strip():
                rows.append(line.rstrip("\n"))
            if len(rows) == n:
                break
    return rows


def row_instance(row):
    inst = {}
    for name, val in zip(COLUMNS, row.split(",")):
        if name in ("fnlwgt", "income_bracket"):
            continue
        inst[name] = int(val) if name in NUMERIC else val
    return inst


# ------------------------------------------------------------- tf.Example

def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def feature(value, as_float=False):
    if isinstance(value, str):
        return field(1, field(1, value.encode()))
    if as_float:
        return field(2, field(1, struct.pack("<f", float(value))))
    return field(3, field(1, varint(int(value))))


def example(inst, float_numbers=False):
    feats = b""
    for k, v in inst.items():
        feats += field(1, field(1, k.encode()) + field(2, feature(v, float_numbers)))
    return field(1, feats)


# ------------------------------------------------------------------ seeds

def seed_json_request(rows, instance):
    insts = [row_instance(r) for r in rows]
    sel_json, sel_csv, sel_ex = 0, 1, 2  # receiver = selector % 3
    predict, classify, regress = 0, 3, 6  # method = (selector / 3) % 3
    def put(name, sel, body):
        write("json_request", name, bytes([sel]) + json.dumps(body).encode())
    put("predict_test_json", sel_json + predict, {"instances": [instance]})
    put("predict_rows", sel_json + predict, {"instances": insts})
    put("predict_signature", sel_json + predict,
        {"signature_name": "predict", "instances": insts[:2]})
    cols = {k: [i[k] for i in insts] for k in insts[0]}
    put("predict_columnar", sel_json + predict, {"inputs": cols})
    put("predict_b64", sel_json + predict,
        {"instances": [dict(instance, occupation={"b64": base64.b64encode(b" Sales").decode()})]})
    put("predict_multivalued", sel_json + predict,
        {"instances": [dict(instance, occupation=[" Sales", " Tech-support"])]})
    ctx = [{k: v for k, v in i.items() if k != "native_country"} for i in insts[1:3]]
    put("classify_examples", sel_json + classify,
        {"examples": ctx, "context": {"native_country": " United-States"}})
    put("regress_examples", sel_json + regress, {"examples": insts[:1]})
    csv = [",".join(r.split(",")[:14]) for r in rows]
    put("csv_instances", sel_csv + predict, {"instances": csv})
    put("csv_inputs", sel_csv + predict, {"inputs": {"csv_row": csv[:2]}})
    exs = [{"b64": base64.b64encode(example(i)).decode()} for i in insts]
    put("example_instances", sel_ex + predict, {"instances": exs})
    put("example_classify", sel_ex + classify, {"examples": insts[:2]})
    put("example_inputs", sel_ex + predict,
        {"signature_name": "predict", "inputs": {"example_proto": exs[:2]}})
    # a few broken ones, so the refusals are covered from the start
    write("json_request", "truncated", bytes([0]) + b'{"instances": [{"age": 25, "wor')
    write("json_request", "nan_strings", bytes([0]) +
          b'{"instances": [{"age": NaN, "hours_per_week": "40", "gender": 1}]}')
    write("json_request", "nested", bytes([0]) + b'{"instances": ' + b"[" * 70 + b"]" * 70 + b"}")


def seed_export_load():
    var = read("tests", "fuzz", "model", "variables.bin", mode="rb")
    for pb in ("model.pb", "model_csv.pb", "model_example.pb"):
        data = read("tests", "fuzz", "model", pb, mode="rb")
        write("export_load", pb.replace(".pb", ""), struct.pack("<I", len(data)) + data + var)
    bad = os.path.join(ROOT, "tests", "data", "bad_exports")
    for case in sorted(os.listdir(bad)):
        d = os.path.join(bad, case)
        if not os.path.isdir(d):
            continue
        parts = []
        for f in ("model.pb", "variables.bin"):
            p = os.path.join(d, f)
            parts.append(open(p, "rb").read() if os.path.isfile(p) else b"")
        write("export_load", "bad_" + case, struct.pack("<I", len(parts[0])) + parts[0] + parts[1])


def seed_config():
    write("config", "predictd_json", read("conf", "predictd.json"))
    write("config", "labels", json.dumps({
        "rest_api_host": "127.0.0.1", "rest_api_port": 0, "max_queue_depth": 16,
        "drain_grace_seconds": 2, "enable_cors": True,
        "models": [
            {"name": "census", "base_path": "models/census",
             "version_policy": {"specific": [1700000002, 1700000001]},
             "version_labels": {"stable": 1700000001, "canary": 1700000002},
             "default_version": "stable"},
            {"name": "other.model-2", "base_path": "/srv/other",
             "model_version_policy": {"all": True}, "default_version": 7}]}, indent=1))
    write("config", "batching", json.dumps({
        "enable_batching": True, "max_batch_size": 64, "batch_timeout_micros": 1000,
        "max_enqueued_batches": 8, "num_batch_threads": 2, "max_queue_depth": 0,
        "models": [{"name": "census", "base_path": "/m", "version_policy": {"latest": 2}}]}))
    write("config", "latest", '{"models": [{"name": "m", "base_path": "/m",'
                              ' "version_policy": {"latest": 3}}]}')
    write("config", "flags", "--model_name=census\n--model_base_path=/tmp\n--rest_api_port=0\n"
                             "--rest_api_num_threads=2\n--enable_cors\n--max_request_bytes=1000")
    write("config", "flags_file", "--model_config_file=/nonexistent/predictd.json\n"
                                  "--rest_api_timeout_in_ms=500")


def seed_textproto():
    # TF Serving's three text-format files, in the shapes its docs show
    write("textproto", "model_config", "model_config_list {\n"
          "  config {\n    name: 'census'\n    base_path: '/srv/census/'\n"
          "    model_platform: 'tensorflow'\n"
          "    model_version_policy { specific { versions: 42 versions: 43 } }\n"
          "    version_labels { key: 'stable' value: 42 }\n"
          "    version_labels { key: 'canary' value: 43 }\n  }\n"
          "  config { name: \"b\" base_path: \"rel/b\" # comment\n"
          "    model_version_policy: < latest { num_versions: 2 } > }\n"
          "  config { name: \"c\" base_path: \"/c\" model_version_policy { all {} } }\n}\n")
    write("textproto", "monitoring", 'prometheus_config {\n  enable: true,\n'
                                     '  path: "/monitoring/prometheus/metrics"\n}\n')
    write("textproto", "batching", "max_batch_size { value: 128 }\n"
                                   "batch_timeout_micros { value: 0 }\n"
                                   "max_enqueued_batches { value: 1000000 }\n"
                                   "num_batch_threads { value: 8 }\n"
                                   "pad_variable_length_inputs: false\n")
    write("textproto", "scalars", "a: \"x\\n\\t\\101\\x42\\u00e9\" 'y'; b: -12, c: 0x1F "
                                  "d: 1.5e-3 e: -inf f: [1, 2, 3] g: [] h: True\n")


def seed_router():
    urls = [
        "GET\n/v1/models", "GET\n/v1/models/census", "GET\n/v1/models/census/versions/17",
        "GET\n/v1/models/census/labels/stable", "GET\n/v1/models/census/metadata",
        "GET\n/v1/models/census/versions/17/metadata",
        "POST\n/v1/models/census:predict", "POST\n/v1/models/census/versions/3:classify",
        "POST\n/v1/models/census/labels/canary:regress",
        "POST\n/v1/projects/p/models/census:predict",
        "POST\n/v1/projects/p/models/census/versions/stable:predict",
        "GET\n/healthz", "HEAD\n/readyz", "GET\n/v2/health/live", "GET\n/v2/health/ready",
        "GET\n/v2/models/census/ready", "GET\n/v2/models/census/versions/2/ready",
        "GET\n/monitoring/prometheus/metrics", "DELETE\n/v1/models/census",
        "POST\n/v1/models/../etc:predict", "GET\n/v1/models/census/versions/-1",
        "GET\n/v1/models/census/versions/99999999999999999999",
    ]
    for i, u in enumerate(urls):
        write("router", "%02d" % i, u)


def seed_csv_row(rows):
    train = census_rows(6, "adult.data.csv")
    write("csv_row", "train_rows", "\n".join(train) + "\n")
    write("csv_row", "test_rows", "\n".join(rows) + "\n")
    write("csv_row", "no_label", "\n".join(",".join(r.split(",")[:14]) for r in rows) + "\n")
    write("csv_row", "quoted", '39, "State-gov", 77516, "Bachelors", 13, "Never-married", '
                               '"Adm-clerical", "Not-in-family", "White", "Male", 2174, 0, 40, '
                               '"United-""States", <=50K\n')
    write("csv_row", "header_blank", ",".join(COLUMNS) + "\n\n" + train[0] + "\r\n")
    write("csv_row", "empty_cells", "25,,,,,,,,,,,,,,>50K\n")


def seed_spec():
    write("spec", "census", read("conf", "census.json"))
    write("spec", "fuzz_model", read("tests", "fuzz", "model", "spec.json"))
    sd = os.path.join(ROOT, "tests", "data", "specs")
    for f in sorted(os.listdir(sd)):
        if f.endswith(".json"):
            write("spec", "specs_" + f.replace(".json", ""), read("tests", "data", "specs", f))
    write("spec", "linear_multiclass", json.dumps({
        "columns": [{"name": "x", "type": "float", "default": 0},
                    {"name": "color", "type": "string", "default": ""},
                    {"name": "y", "type": "string", "default": ""}],
        "label": {"column": "y", "vocabulary": ["a", "b", "c"]},
        "feature_columns": [
            {"type": "numeric_column", "key": "x"},
            {"type": "categorical_column_with_vocabulary_list", "key": "color",
             "vocabulary_list": ["red", "green", "blue"], "num_oov_buckets": 1}],
        "estimator": {"type": "LinearClassifier", "n_classes": 3,
                      "feature_columns": ["x", "color"],
                      "optimizer": {"type": "Ftrl", "learning_rate": 0.1}},
        "train": {"batch_size": 8, "max_steps": 10},
        "export": {"name": "lin", "format": "CSV"}}))
    write("spec", "dnn_regressor", json.dumps({
        "columns": [{"name": "a", "type": "float", "default": 0},
                    {"name": "b", "type": "float", "default": 0},
                    {"name": "t", "type": "float", "default": 0}],
        "label": {"column": "t"},
        "feature_columns": [{"type": "numeric_column", "key": "a"},
                            {"type": "numeric_column", "key": "b"}],
        "estimator": {"type": "DNNRegressor", "hidden_units": [4, 2],
                      "feature_columns": ["a", "b"],
                      "optimizer": {"type": "Adam", "learning_rate": 0.01}},
        "eval": {"steps": 2},
        "export": {"name": "reg", "format": "EXAMPLE",
                   "exporters": [{"type": "BestExporter", "name": "best"}]}}))


def seed_example(rows, instance):
    write("example", "test_json", example(instance))
    write("example", "test_json_floats", example(instance, float_numbers=True))
    for i, r in enumerate(rows[:3]):
        write("example", "row%d" % i, example(row_instance(r)))
    write("example", "multivalued", example({"occupation": " Sales", "age": 40}) +
          field(1, field(1, field(1, b"gender") + field(2, field(1, field(1, b" Male") +
                                                             field(1, b" Female"))))))
    write("example", "empty", b"")


def main():
    rows = census_rows(5)
    instance = json.loads(read("data", "census", "test.json"))
    seed_json_request(rows, instance)
    seed_export_load()
    seed_config()
    seed_textproto()
    seed_router()
    seed_csv_row(rows)
    seed_spec()
    seed_example(rows, instance)


if __name__ == "__main__":
    main()
