/*
 * fuzz_json_request.c — fuzzes the JSON request path, rt_json_handle:
 * TensorFlow Serving's "instances" / "inputs" / "examples" bodies parsed into
 * a batch (JSON features, CSV lines or b64 tf.Examples, by the model's
 * receiver), transformed, run and answered, on the small census model.
 *
 * Input: one selector byte, then the body. Selector % 3 picks the model's
 * serving input function (JSON features, CSV, tf.Example), (selector / 3) % 3
 * the method (predict, classify, regress). Checked besides the sanitizers: a
 * refusal is RT_ERR_INVALID or RT_ERR_LIMIT with a message; an answer is
 * valid JSON; the same body handled again with the same rt_ctx (as a daemon
 * thread reuses it) gets the same status and byte-identical answer.
 *
 * Differential: the body is also parsed by the runtime's streaming parser
 * and by the reference parser (tests/unit/support/support_json_ref.c, an
 * independent prescan + cJSON implementation of the same rules); both must accept or both refuse it, and accepted
 * bodies must give the same instances, values, signature and form.
 */
#include "fz_util.h"
#include "support_json_ref.h"

#include <stdio.h>

#include <string.h>

#define FZ_BODY_MAX (256u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FZ_BODY_MAX)
        return 0;
    static const rt_method methods[3] = {RT_METHOD_PREDICT, RT_METHOD_CLASSIFY,
                                         RT_METHOD_REGRESS};
    const rt_model *m = fz_model((fz_model_kind)(data[0] % 3));
    rt_method method = methods[(data[0] / 3) % 3];
    const char *body = (const char *)data + 1;
    size_t len = size - 1;

    rt_json_params p = rt_json_default_params();
    rt_ctx *c = rt_ctx_new();
    rt_buf out[2];
    rt_status st[2];
    rt_err err;
    FZ_CHECK(c != NULL, "out of memory");
    rt_buf_init(&out[0]);
    rt_buf_init(&out[1]);
    for (int k = 0; k < 2; k++) {
        err.msg[0] = '\0';
        st[k] = rt_json_handle(m, method, body, len, &p, c, &out[k], &err);
        if (k == 0)
            fz_note("rt_json_handle", st[k], &err);
        if (st[k] != RT_OK) {
            FZ_CHECK(st[k] == RT_ERR_INVALID || st[k] == RT_ERR_LIMIT ||
                         st[k] == RT_ERR_UNSUPPORTED,
                     "request refused with an unexpected status");
            FZ_CHECK(err.msg[0] != '\0', "request refused without a message");
            FZ_CHECK(memchr(err.msg, '\0', sizeof err.msg) != NULL, "message not terminated");
            continue;
        }
        FZ_CHECK(fz_json_valid(out[k].data, out[k].len), "answer is not valid JSON");
    }
    FZ_CHECK(st[0] == st[1], "the same body answered with two statuses");
    if (st[0] == RT_OK)
        FZ_CHECK(out[0].len == out[1].len && !memcmp(out[0].data, out[1].data, out[0].len),
                 "the same body gave two different answers");
    rt_buf_free(&out[0]);
    rt_buf_free(&out[1]);

    rt_ctx *ref = rt_ctx_new();
    FZ_CHECK(ref != NULL, "out of memory");
    char why[700];
    if (support_json_ref_compare(m, method, body, len, &p, c, ref, why, sizeof why) != 0) {
        fprintf(stderr, "differential: %s\n", why);
        FZ_CHECK(0, "the parser and the reference parser disagree");
    }
    rt_ctx_free(ref);
    rt_ctx_free(c);
    return 0;
}
