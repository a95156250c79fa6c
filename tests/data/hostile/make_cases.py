#!/usr/bin/env python3
"""make_cases.py — writes cases.jsonl, the hostile-request corpus that
tests/integration/test_robust_corpus sends to a real predictd.

Run it after editing the case list below: python3 make_cases.py > cases.jsonl
(the .jsonl is what the test reads; this script only keeps the long bodies
readable). One JSON object per line:

  name        unique, short
  method      HTTP method (default POST); path: the request target, sent as is
  headers     extra request headers {name: value}
  body        text sent as UTF-8, or body_b64 (raw bytes), or
  gen         [[text, count], ...]: the body is each text repeated count times
              (huge bodies are described, not stored)
  content_length  declared Content-Length when it differs from the body
              (the client then waits for the answer without sending the rest)
  chunked     true: the body goes out with Transfer-Encoding: chunked
  raw_b64     the whole request (request line, headers, body) as raw bytes, or
  raw_gen     the same as a gen list (texts are Latin-1); path_gen: the path
  expect      {"status": N, "error": "fragment of the error message",
               "json": false when libmicrohttpd answers itself (HTML),
               "closed_ok": true when closing the connection is acceptable,
               "body": fragment of a 2xx answer}
  known_bug   present when the daemon is known to answer wrongly today: the
              reason and where to fix it. Such a case is reported as a
              comment, not a failure, unless PREDICTD_STRICT=1.

Models the test serves: "census" (conf/census.json, version 100, label
"stable"), "lin" (builtin:linear, 3 classes, inputs x, color; version 5),
"reg" (builtin:regressor, inputs a, b; version 7). max_request_bytes is
3000000 and the JSON limits are the defaults (depth 64, 100000 instances).
"""
import base64
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
with open(os.path.join(ROOT, "data", "census", "test.json")) as f:
    INST = json.loads(f.readline())
I = json.dumps(INST)
CP = "/v1/models/census:predict"
LP = "/v1/models/lin:predict"
LIN = '{"x": 1, "color": "red"}'
cases = []


def case(name, expect, method="POST", path=CP, **kw):
    c = {"name": name, "method": method, "path": path}
    c.update(kw)
    c["expect"] = expect
    cases.append(c)


def e400(frag):
    return {"status": 400, "error": frag}


def inst_with(key, raw_value):
    """The census instance with key's value replaced by raw JSON text."""
    d = dict(INST)
    d[key] = "@@V@@"
    return json.dumps(d).replace('"@@V@@"', raw_value)


def b64(data):
    return base64.b64encode(data).decode()


# ------------------------------------------------ malformed / truncated JSON
case("empty body", e400("not valid JSON"), body="")
case("whitespace body", e400("not valid JSON"), body="  \n\t ")
case("truncated after [", e400("not valid JSON"), body='{"instances": [')
case("truncated mid instance", e400("not valid JSON"), body='{"instances": [' + I[:40])
case("truncated mid string", e400("not valid JSON"), body='{"instances": [{"workclass": " Priv')
case("truncated mid number", e400("not valid JSON"), body='{"instances": [{"age": 2')
case("truncated mid escape", e400("not valid JSON"), body='{"instances": [{"workclass": "a\\u00')
case("missing closing brace", e400("not valid JSON"), body='{"instances": [' + I + ']')
case("trailing comma in list", e400("not valid JSON"), body='{"instances": [' + I + ',]}')
case("trailing comma in object", e400("not valid JSON"),
     body='{"instances": [' + I[:-1] + ',}]}')
case("single quotes", e400("not valid JSON"), body="{'instances': []}")
case("unquoted key", e400("not valid JSON"), body='{instances: []}')
case("comment before body", e400("not valid JSON"), body='/* c */{"instances": []}')
case("text after the value", e400("text after the JSON value"),
     body='{"instances": [' + I + ']} xyz')
case("two JSON documents", e400("text after the JSON value"),
     body='{"instances": [' + I + ']}{}')
case("bare string body", e400("must be a JSON object"), body='"instances"')
case("null body", e400("must be a JSON object"), body="null")
case("list body", e400("must be a JSON object"), body="[" + I + "]")
case("number body", e400("must be a JSON object"), body="42")
case("hex number", e400("not valid JSON"), body='{"instances": [' + inst_with("age", "0x19") + ']}')
case("plus sign number", e400("not valid JSON"),
     body='{"instances": [' + inst_with("age", "+25") + ']}')
case("leading dot number", e400("not valid JSON"),
     body='{"instances": [' + inst_with("age", ".5") + ']}')
case("bare minus", e400("not valid JSON"), body='{"instances": [' + inst_with("age", "-") + ']}')
case("lone surrogate escape", e400("not valid JSON"),
     body='{"instances": [' + inst_with("workclass", '"\\ud800"') + ']}')
case("bad escape", e400("not valid JSON"),
     body='{"instances": [' + inst_with("workclass", '"\\q"') + ']}')
case("leading zero number", e400("instances[0].age: number 025 has a leading zero"),
     body='{"instances": [' + inst_with("age", "025") + ']}')
case("raw control char in string",
     e400("instances[0].workclass: raw control character"),
     body='{"instances": [' + inst_with("workclass", '"a\tb"') + ']}')

# ------------------------------------------------ wrong shapes and types
case("instances is an object", e400('"instances" must be a list'), body='{"instances": {}}')
case("instances is a number", e400('"instances" must be a list'), body='{"instances": 5}')
case("instances is NaN", e400('"instances" must be a list'), body='{"instances": NaN}')
case("instances is a string", e400('"instances" must be a list'), body='{"instances": "x"}')
case("instances is null", e400("instances"), body='{"instances": null}')
case("instance is a list", e400("expected an object keyed by input name"),
     body='{"instances": [[1, 2, 3]]}')
case("instance is a number", e400("instances[0]"), body='{"instances": [5]}')
case("second instance broken", e400("instances[1]"),
     body='{"instances": [' + I + ', 7]}')
case("neither instances nor inputs", e400("Missing 'inputs' or 'instances' key"),
     body='{"foo": 1}')
case("empty object", e400("instances"), body='{}')
case("instances and inputs", e400("not both"),
     body='{"instances": [' + I + '], "inputs": {"age": [25]}}')
case("unknown top-level key is ignored (TF Serving's rule)",
     {"status": 200, "body": '"predictions"'}, body='{"instances": [' + I + '], "extra": 1}')
case("signature_name unknown", e400('signature_name "nope" not found'),
     body='{"signature_name": "nope", "instances": [' + I + ']}')
case("signature_name a number", e400('"signature_name" must be a string'),
     body='{"signature_name": 5, "instances": [' + I + ']}')
case("signature_name huge", e400("signature_name"),
     body='{"signature_name": "' + "s" * 5000 + '", "instances": [' + I + ']}')
case("string for number", e400('instances[0].age: expected a number, got \\"25\\"'.replace(
    '\\"', '"')), body='{"instances": [' + inst_with("age", '"25"') + ']}')
case("bool for number", e400("instances[0].age: expected a number, got true"),
     body='{"instances": [' + inst_with("age", "true") + ']}')
case("null for number", e400("instances[0].age: expected a number, got null"),
     body='{"instances": [' + inst_with("age", "null") + ']}')
case("object for number", e400("instances[0].age: expected a number, got an object"),
     body='{"instances": [' + inst_with("age", '{"a": 1}') + ']}')
case("two values for a scalar", e400("instances[0].age: expected 1 value, got 2"),
     body='{"instances": [' + inst_with("age", "[25, 26]") + ']}')
case("empty list for a scalar", e400("instances[0].age"),
     body='{"instances": [' + inst_with("age", "[]") + ']}')
case("number for string", e400("instances[0].workclass: expected a string, got 5"),
     body='{"instances": [' + inst_with("workclass", "5") + ']}')
case("list of lists for string", e400("instances[0].workclass"),
     body='{"instances": [' + inst_with("workclass", '[["a"]]') + ']}')
case("unknown input", e400("instances[0].shoe_size: unknown input"),
     body='{"instances": [' + I[:-1] + ', "shoe_size": 44}]}')
case("missing input", e400("instances[0].age: missing input"),
     body='{"instances": [' + json.dumps({k: v for k, v in INST.items() if k != "age"}) + ']}')
case("empty key", e400("instances[0]"), body='{"instances": [' + I[:-1] + ', "": 1}]}')
case("duplicate key in instance", e400("instances[0].age: given more than once"),
     body='{"instances": [' + I[:-1] + ', "age": 30}]}')
case("duplicate top-level key", e400('key "instances" given twice'),
     body='{"instances": [' + I + '], "instances": [' + I + ']}')
case("columnar lengths differ", e400("inputs.color: 1 values, but inputs.x has 2"), path=LP,
     body='{"inputs": {"x": [1, 2], "color": ["red"]}}')
case("columnar duplicate key", e400("inputs.x: given more than once"), path=LP,
     body='{"inputs": {"x": [1], "x": [2], "color": ["red"]}}')
case("columnar not an object", e400("inputs"), path=LP, body='{"inputs": 5}')
case("columnar input the signature lacks is ignored", {"status": 200, "body": '"outputs"'},
     path=LP, body='{"inputs": {"x": [1], "color": ["red"], "zz": [1]}}')
case("columnar missing inputs are all named", e400("not given: color"), path=LP,
     body='{"inputs": {"x": [1]}}')
case("classify given instances says to send examples", e400('send {"examples"'),
     path="/v1/models/lin:classify", body='{"instances": [{"x": 1, "color": "red"}]}')
case("classify without examples", e400('missing \\"examples\\"'.replace('\\"', '"')),
     path="/v1/models/lin:classify", body='{"context": {"x": 2}}')
case("classify examples not a list", e400('"examples" must be a list of objects'),
     path="/v1/models/census:classify", body='{"examples": "x"}')
case("classify key in example and context", e400("examples[0].x: also given in context"),
     path="/v1/models/lin:classify",
     body='{"examples": [{"x": 1}], "context": {"x": 2, "color": "red"}}')
case("regress on a classifier", e400("regress: the model has no regression signature"),
     path="/v1/models/lin:regress", body='{"examples": [{"x": 1, "color": "red"}]}')
case("regressor given a string", e400("instances[0].a"), path="/v1/models/reg:predict",
     body='{"instances": [{"a": "one", "b": 2}]}')
case("classify on a regressor", e400("classify: the model has no classification signature"),
     path="/v1/models/reg:classify", body='{"examples": [{"a": 1, "b": 2}]}')
case("classify error names examples", e400("examples[0].age: expected 1 value, got 2"),
     path="/v1/models/census:classify",
     body='{"examples": [' + inst_with("age", "[25, 26]") + ']}')

# ------------------------------------------------ numbers out of range
case("1e400 for a float input", e400("instances[0].age: number out of range"),
     body='{"instances": [' + inst_with("age", "1e400") + ']}')
case("-1e400 for a float input", e400("instances[0].age: number out of range"),
     body='{"instances": [' + inst_with("age", "-1e400") + ']}')
case("-0 is a number", {"status": 200, "body": '"predictions"'},
     body='{"instances": [' + inst_with("age", "-0") + ']}')
case("1e-400 underflows to 0", {"status": 200, "body": '"predictions"'},
     body='{"instances": [' + inst_with("age", "1e-400") + ']}')
case("NaN is accepted as TF Serving does", {"status": 200, "body": "NaN"},
     body='{"instances": [' + inst_with("age", "NaN") + ']}')
case("Infinity token", {"status": 200, "body": '"predictions"'},
     body='{"instances": [' + inst_with("age", "-Infinity") + ']}')
case("NaN where a string is needed", e400("instances[0].workclass"),
     body='{"instances": [' + inst_with("workclass", "NaN") + ']}')
case("NaN as signature_name", e400('"signature_name" must be a string, got NaN'),
     body='{"signature_name": NaN, "instances": [' + I + ']}')
case("nan lower case", e400("not valid JSON"),
     body='{"instances": [' + inst_with("age", "nan") + ']}')
case("huge integer literal (beyond a double)", e400("instances[0].age: number out of range"),
     body='{"instances": [' + inst_with("age", "9" * 400) + ']}')
case("300-digit integer becomes Infinity for a float input",
     {"status": 200, "body": '"predictions"'},
     body='{"instances": [' + inst_with("age", "9" * 300) + ']}')
case("leading zero in a column", e400("inputs.x[1]: number 007 has a leading zero"),
     path=LP,
     body='{"inputs": {"x": [1, 007], "color": ["red", "red"]}}')
case("malformed number 1.", e400("instances[0].age: number 1. is malformed"),
     body='{"instances": [' + inst_with("age", "1.") + ']}')
case("3.5e38 becomes Infinity for a float input, as TF Serving converts it",
     {"status": 200, "body": '"predictions"'},
     body='{"instances": [' + inst_with("age", "3.5e38") + ']}')
case("-3.4028234e38 fits float32", {"status": 200, "body": '"predictions"'},
     body='{"instances": [' + inst_with("age", "-3.4028234e38") + ']}')
case("NaN in a key's place", e400("not valid JSON"),
     body='{"instances": [' + I[:-1] + ', NaN: 1}]}')
case("number with 5000 digits of fraction", {"status": 200, "body": '"predictions"'},
     body='{"instances": [' + inst_with("age", "25." + "1" * 5000) + ']}')

# ------------------------------------------------ strings, UTF-8, b64
case("huge string value (150 kB)", {"status": 200, "body": '"predictions"'},
     gen=[['{"instances": [' + inst_with("workclass", '"@@').split("@@")[0], 1], ["P", 150000],
          [inst_with("workclass", '"@@"').split("@@")[1] + "]}", 1]])
case("huge unknown key (100 kB)", e400("unknown input"),
     gen=[['{"instances": [' + I[:-1] + ', "', 1], ["k", 100000], ['": 1}]}', 1]])
case("invalid UTF-8 byte 0xFF in a string", e400("invalid UTF-8"),
     body_b64=b64(('{"instances": [' + inst_with("workclass", '"Priv@@ate"') + ']}').encode()
                  .replace(b"@@", b"\xff")))
case("invalid UTF-8 byte 0xFE in a key", e400("invalid UTF-8"),
     body_b64=b64(b'{"instances": [{"\xfeage": 1}]}'))
case("truncated UTF-8 sequence in a key",
     e400("instances[0] (in a key): invalid UTF-8 at byte 19"),
     body_b64=b64(b'{"instances": [{"ag\xc3": 1}]}'))
case("overlong UTF-8 encoding of /", e400("invalid UTF-8"),
     body_b64=b64(('{"instances": [' + inst_with("workclass", '"@@Private"') + ']}').encode()
                  .replace(b"@@", b"\xc0\xaf")))
case("UTF-16 surrogate bytes in UTF-8", e400("invalid UTF-8"),
     body_b64=b64(('{"instances": [' + inst_with("workclass", '"@@"') + ']}').encode()
                  .replace(b"@@", b"\xed\xa0\x80")))
case("code point above U+10FFFF", e400("instances[0].workclass: invalid UTF-8"),
     body_b64=b64(('{"instances": [' + inst_with("workclass", '"@@"') + ']}').encode()
                  .replace(b"@@", b"\xf4\x90\x80\x80")))
case("invalid UTF-8 in signature_name", e400("signature_name: invalid UTF-8"),
     body_b64=b64(b'{"signature_name": "serving\xe2\x9c", "instances": []}'))
case("raw NUL byte in a string", e400("raw control character U+0000"),
     body_b64=b64(('{"instances": [' + inst_with("workclass", '"a@@b"') + ']}').encode()
                  .replace(b"@@", b"\x00")))
case("invalid UTF-8 in an example", e400("examples[0].color: invalid UTF-8"),
     path="/v1/models/lin:classify",
     body_b64=b64(b'{"examples": [{"x": 1, "color": "r\xc0\x80"}], "context": {}}'))
case("valid UTF-8 in a value", {"status": 200, "body": '"predictions"'},
     body='{"instances": [' + inst_with("workclass", '"Privé – 私"') + ']}')
case("escaped NUL in a string", {"status": 200, "body": '"predictions"'},
     body='{"instances": [' + inst_with("workclass", '"a\\u0000b"') + ']}')
case("UTF-8 BOM before the body", {"status": 200, "body": '"predictions"'},
     body_b64=b64(b"\xef\xbb\xbf" + ('{"instances": [' + I + ']}').encode()))
case("b64 with an invalid character", e400("instances[0].workclass: invalid base64"),
     body='{"instances": [' + inst_with("workclass", '{"b64": "!!!"}') + ']}')
case("b64 is a number", e400('expected a base64 string in \\"b64\\"'.replace('\\"', '"')),
     body='{"instances": [' + inst_with("workclass", '{"b64": 5}') + ']}')
case("b64 with an extra key", e400("instances[0].workclass"),
     body='{"instances": [' + inst_with("workclass", '{"b64": "IA==", "x": 1}') + ']}')
case("b64 with padding inside", e400("instances[0].workclass"),
     body='{"instances": [' + inst_with("workclass", '{"b64": "IA==IA=="}') + ']}')
case("b64 valid", {"status": 200, "body": '"predictions"'},
     body='{"instances": [' + inst_with("workclass", '{"b64": "IFByaXZhdGU="}') + ']}')
case("b64 for a number input", e400("instances[0].age"),
     body='{"instances": [' + inst_with("age", '{"b64": "MjU="}') + ']}')

# ------------------------------------------------ nesting and counts
case("10,000-deep lists", e400("nested deeper than 64 levels"),
     gen=[['{"instances": ', 1], ["[", 10000], ["]", 10000], ["}", 1]])
case("10,000-deep objects", e400("nested deeper than 64 levels"),
     gen=[['{"instances": [', 1], ['{"a": ', 10000], ["1", 1], ["}", 10000], ["]}", 1]])
case("100,000 unclosed brackets", e400("nested deeper than 64 levels"),
     gen=[['{"instances": ', 1], ["[", 100000]])
case("10,000-deep inside a value", e400("nested deeper than 64 levels"),
     gen=[['{"instances": [{"age": ', 1], ["[", 10000], ["25", 1], ["]", 10000], ["}]}", 1]])
case("depth 60 is under the limit", e400("instances[0]"),
     gen=[['{"instances": ', 1], ["[", 60], ["]", 60], ["}", 1]])
case("100,000 instances are served", {"status": 200, "body": '"predictions"'}, path=LP,
     gen=[['{"instances": [', 1], [LIN + ",", 99999], [LIN, 1], ["]}", 1]])
case("100,001 instances", e400("100001 instances, the limit is 100000"), path=LP,
     gen=[['{"instances": [', 1], [LIN + ",", 100000], [LIN, 1], ["]}", 1]])
case("100,001 columnar values", e400("100001"), path=LP,
     gen=[['{"inputs": {"x": [', 1], ["1,", 100000], ['1], "color": [', 1],
          ['"red",', 100000], ['"red"]}}', 1]])
case("200,000 empty instances", e400("instances"), path=LP,
     gen=[['{"instances": [', 1], ["{},", 199999], ["{}]}", 1]])

# ------------------------------------------------ sizes
case("body over max_request_bytes (Content-Length)",
     {"status": 413, "error": "over the limit of 3000000 bytes"},
     gen=[['{"instances": ["', 1], ["x", 3100000], ['"]}', 1]])
case("Content-Length 1 GB, 15 bytes sent: 413 before the rest",
     {"status": 413, "error": "request body of 1000000000 bytes is over the limit"},
     body='{"instances": [', content_length=1000000000)
case("Content-Length 10^20", {"status": 413, "json": False}, body="{}",
     content_length=10 ** 20)
case("chunked body over the limit",
     {"status": 413, "error": "over the limit", "closed_ok": True}, chunked=True,
     gen=[['{"instances": ["', 1], ["x", 3500000], ['"]}', 1]])
case("GET with a large body", {"status": 413, "error": "over the limit"}, method="GET",
     path="/v1/models/census", gen=[["x", 4000000]])
case("GET with a small body is answered", {"status": 200, "body": "model_version_status"},
     method="GET", path="/v1/models/census", body="ignored")
case("Expect: 100-continue with a huge length", {"status": 413, "error": "over the limit"},
     headers={"Expect": "100-continue"}, body="", content_length=100000000)

# ------------------------------------------------ methods
for m in ("DELETE", "PUT", "PATCH", "TRACE", "FOO", "get"):
    case("method %s on :predict" % m, {"status": 405, "error": "use POST"}, method=m,
         body="{}")
for m in ("POST", "DELETE", "PUT"):
    case("method %s on a status path" % m, {"status": 405, "error": "use GET"}, method=m,
         path="/v1/models/census", body="{}")
case("GET on :predict", {"status": 405, "error": "use POST"}, method="GET")
case("OPTIONS without CORS", {"status": 405, "error": "OPTIONS"}, method="OPTIONS",
     path="/v1/models/census")
case("HEAD on status", {"status": 200, "json": False}, method="HEAD", path="/v1/models/census")

# ------------------------------------------------ URLs
case("unknown path", {"status": 404, "error": "no such path"}, method="GET", path="/v1/nothing")
case("root", {"status": 404, "error": "no such path"}, method="GET", path="/")
case("double slashes", {"status": 404, "error": "no such path"}, method="GET",
     path="//v1//models//census")
case("very long path (5,000 bytes)", {"status": 404, "error": "no such path"}, method="GET",
     path="/v1/models/" + "a" * 5000)
case("very long model name (1,000 bytes)", {"status": 404, "error": "not found"},
     method="GET", path="/v1/models/" + "a" * 1000)
case("path of 100,000 bytes", {"status": 414, "json": False}, method="GET",
     path_gen=[["/v1/models/", 1], ["a", 100000]])
case("too many segments", {"status": 404, "error": "no such path"}, method="GET",
     path="/v1/models/census" + "/versions/100" * 20)
case("query string ignored", {"status": 200, "body": "model_version_status"}, method="GET",
     path="/v1/models/census?x=1&y")
case("fragment is part of the name", {"status": 404, "error": "not found"}, method="GET",
     path="/v1/models/census#frag")
case("absolute URI", {"status": 404, "error": "no such path"}, method="GET",
     path="http://127.0.0.1/v1/models/census")
case("asterisk target", {"status": 404, "error": "no such path"}, method="OPTIONS", path="*")
case("unknown verb", {"status": 404, "error": "unknown method ':interpret'"},
     path="/v1/models/census:interpret")
case("empty verb", {"status": 404, "error": "unknown method"}, path="/v1/models/census:")
case("verb without model", {"status": 404, "error": "no such path"}, path="/v1/models/:predict")
case("colon inside the name", {"status": 404, "error": "unknown method"},
     path="/v1/models/cen:sus:predict")
case("unknown model", {"status": 404, "error": "nope"}, path="/v1/models/nope:predict",
     body='{"instances": [' + I + ']}')
case("model name with a space", {"status": 404, "error": "not found"}, method="GET",
     path="/v1/models/cen%20sus")
case("model name with a control byte", {"status": 404, "error": "not found"}, method="GET",
     path="/v1/models/cen%01sus")
case("model name with invalid UTF-8", {"status": 404, "error": "not found"}, method="GET",
     path="/v1/models/%FF%FE")

# percent-encoding tricks and .. in names, versions and labels
case("model ..", {"status": 404, "error": "model '..' not found"}, method="GET",
     path="/v1/models/..")
case("model %2e%2e", {"status": 404, "error": "model '..' not found"}, method="GET",
     path="/v1/models/%2e%2e")
case("model %2e%2e%2f..%2fetc", {"status": 404, "error": "not found"}, method="GET",
     path="/v1/models/%2e%2e%2f%2e%2e%2fetc%2fpasswd")
case("path with ../..", {"status": 404, "error": "no such path"}, method="GET",
     path="/v1/models/census/../../etc/passwd")
case("predict on ..", {"status": 404, "error": "not found"}, path="/v1/models/..:predict",
     body='{"instances": [' + I + ']}')
case("model .hidden", {"status": 404, "error": "not found"}, method="GET",
     path="/v1/models/.census")
case("backslashes", {"status": 404, "error": "not found"}, method="GET",
     path="/v1/models/..%5c..%5cetc")
case("double-encoded dots", {"status": 404, "error": "not found"}, method="GET",
     path="/v1/models/%252e%252e")
case("malformed percent escape", {"status": 404, "error": "not found"}, method="GET",
     path="/v1/models/%zz")
case("percent at the end", {"status": 404, "error": "not found"}, method="GET",
     path="/v1/models/census%")
case("encoded NUL after the name", {"status": 404, "error": "not found"}, method="GET",
     path="/v1/models/census%00.json")
case("encoded slashes make segments", {"status": 200, "body": "model_version_status"},
     method="GET", path="/v1/models/census%2Fversions%2F100")
case("version ..", {"status": 400, "error": "version '..' is not a version number"},
     method="GET", path="/v1/models/census/versions/..")
case("version %2e%2e", {"status": 400, "error": "is not a version number"}, method="GET",
     path="/v1/models/census/versions/%2e%2e")
case("label ..", {"status": 400, "error": "label '..' is not a valid label name"},
     method="GET", path="/v1/models/census/labels/..")
case("label %2e%2e%2f", {"status": 400, "error": "label '..' is not a valid label name"},
     method="GET",
     path="/v1/models/census/labels/%2e%2e%2fx")
case("label with a slash-free trick", {"status": 400, "error": "not a valid label name"},
     method="GET", path="/v1/models/census/labels/a%5Cb")
case("unknown label", {"status": 400, "error": "gold"}, path="/v1/models/census/labels/gold:predict",
     body='{"instances": [' + I + ']}')
case("version and label", {"status": 400, "error": "not both"},
     path="/v1/models/census/versions/100/labels/stable:predict", body='{"instances": [' + I + ']}')

# huge or negative version numbers
case("version -1", {"status": 400, "error": "version '-1' is not a version number"},
     method="GET", path="/v1/models/census/versions/-1")
case("version -100 on predict", {"status": 400, "error": "is not a version number"},
     path="/v1/models/census/versions/-100:predict", body='{"instances": [' + I + ']}')
case("version +100", {"status": 400, "error": "is not a version number"}, method="GET",
     path="/v1/models/census/versions/+100")
case("version 0x64", {"status": 400, "error": "is not a version number"}, method="GET",
     path="/v1/models/census/versions/0x64")
case("version 1e2", {"status": 400, "error": "is not a version number"}, method="GET",
     path="/v1/models/census/versions/1e2")
case("version 100.0", {"status": 400, "error": "is not a version number"}, method="GET",
     path="/v1/models/census/versions/100.0")
case("version with a space", {"status": 400, "error": "is not a version number"},
     method="GET", path="/v1/models/census/versions/%20100")
case("version 2^63 (over int64)", {"status": 400, "error": "is not a version number"},
     method="GET", path="/v1/models/census/versions/9223372036854775808")
case("version of 300 digits", {"status": 400, "error": "is not a version number"},
     method="GET", path="/v1/models/census/versions/" + "9" * 300)
case("version 10^18-1, not loaded", {"status": 404, "error": "999999999999999999"},
     method="GET", path="/v1/models/census/versions/999999999999999999")
case("version 0, not loaded", {"status": 404, "error": "not available"}, method="GET",
     path="/v1/models/census/versions/0")
case("CMLE version of 23 digits", {"status": 400, "error": "99999999999999999999999"},
     path="/v1/projects/p/models/census/versions/99999999999999999999999:predict",
     body='{"instances": [' + I + ']}')
case("CMLE version -5", {"status": 400, "error": "-5"},
     path="/v1/projects/p/models/census/versions/-5:predict", body='{"instances": [' + I + ']}')

# ------------------------------------------------ broken HTTP (raw requests)
def raw(name, data, expect):
    cases.append({"name": name, "raw_b64": b64(data), "expect": expect})


raw("HTTP/0.9 request line", b"GET /v1/models/census\r\n\r\n", {"status": 400, "json": False})
raw("HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", {"status": 505, "json": False})
raw("TLS client hello", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n",
    {"status": 400, "json": False, "closed_ok": True})
raw("negative Content-Length",
    b"POST " + CP.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n{}",
    {"status": 400, "json": False})
raw("non-numeric Content-Length",
    b"POST " + CP.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}",
    {"status": 400, "json": False})
raw("bad chunk size", b"POST " + CP.encode() + b" HTTP/1.1\r\nHost: x\r\n"
    b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", {"status": 400, "json": False})
raw("huge chunk size", b"POST " + CP.encode() + b" HTTP/1.1\r\nHost: x\r\n"
    b"Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\n{}",
    {"status": 413, "json": False})
cases.append({"name": "header line of 100 kB", "expect": {"status": 431, "json": False},
              "raw_gen": [["GET /v1/models/census HTTP/1.1\r\nHost: x\r\nX-A: ", 1],
                          ["a", 100000], ["\r\n\r\n", 1]]})
cases.append({"name": "5,000 headers", "expect": {"status": 431, "json": False},
              "raw_gen": [["GET /v1/models/census HTTP/1.1\r\nHost: x\r\n", 1],
                          ["X-A: b\r\n", 5000], ["\r\n", 1]]})
raw("header without a colon", b"GET /v1/models/census HTTP/1.1\r\nHost: x\r\nbogus\r\n"
    b"Connection: close\r\n\r\n", {"status": 400, "json": False})
raw("HTTP/1.0 without Host", b"GET /v1/models/census HTTP/1.0\r\n\r\n",
    {"status": 200, "body": "model_version_status"})
raw("bare LF line ends", b"GET /healthz HTTP/1.1\nHost: x\nConnection: close\n\n",
    {"status": 400, "error": "bare LF line ending"})

if __name__ == "__main__":
    names = set()
    for c in cases:
        assert c["name"] not in names, c["name"]
        names.add(c["name"])
        print(json.dumps(c, ensure_ascii=True))
