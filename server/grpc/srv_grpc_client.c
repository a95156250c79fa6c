/*
 * srv_grpc_client.c — one unary gRPC call as a client, on the gRPC core C
 * API (the client half of the room; srv_grpc.c is the server's): a channel
 * to HOST:PORT, plain or TLS (a CA to verify the daemon, a client
 * certificate for mutual TLS), the call with its deadline and an optional
 * bearer token in the `authorization` metadata, the answer's bytes and
 * status. For predictctl --grpc (server/ctl/srv_ctl_grpc.c).
 */
#include "srv_grpc_internal.h"
#include "srv_limits.h"

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The channel's credentials (NULL on a file error, in err). */
static grpc_channel_credentials *client_creds(const srv_grpc_client_params *p, rt_err *err)
{
    if (!p->tls)
        return grpc_insecure_credentials_create();
    char *ca = NULL, *cert = NULL, *key = NULL;
    grpc_channel_credentials *cc = NULL;
    if ((p->cacert &&
         rt_file_read(AT_FDCWD, p->cacert, SRV_TLS_MAX_PEM_BYTES, 0, &ca, NULL, err) != RT_OK) ||
        (p->cert &&
         rt_file_read(AT_FDCWD, p->cert, SRV_TLS_MAX_PEM_BYTES, 0, &cert, NULL, err) != RT_OK) ||
        (p->key &&
         rt_file_read(AT_FDCWD, p->key, SRV_TLS_MAX_PEM_BYTES, 0, &key, NULL, err) != RT_OK))
        goto out;
    grpc_ssl_pem_key_cert_pair pair = {key, cert};
    cc = grpc_ssl_credentials_create(ca, cert && key ? &pair : NULL, NULL, NULL);
    if (!cc)
        rt_err_set(err, RT_ERR_IO, "grpc: cannot make TLS credentials");
out:
    if (key)
        memset(key, 0, strlen(key));
    free(ca), free(cert), free(key);
    return cc;
}

static void read_answer(grpc_byte_buffer *bb, rt_buf *out)
{
    grpc_byte_buffer_reader r;
    if (!bb || !grpc_byte_buffer_reader_init(&r, bb))
        return;
    grpc_slice sl;
    while (grpc_byte_buffer_reader_next(&r, &sl)) {
        rt_buf_append(out, GRPC_SLICE_START_PTR(sl), GRPC_SLICE_LENGTH(sl));
        grpc_slice_unref(sl);
    }
    grpc_byte_buffer_reader_destroy(&r);
}

rt_status srv_grpc_client_call(const srv_grpc_client_params *p, const char *method,
                               const uint8_t *in, size_t len, rt_buf *out, int *code, char *msg,
                               size_t msg_len, rt_err *err)
{
    *code = SRV_GRPC_UNKNOWN;
    if (msg_len)
        msg[0] = '\0';
    grpc_init();
    rt_status st = RT_OK;
    grpc_channel_credentials *cc = client_creds(p, err);
    if (!cc) {
        grpc_shutdown();
        return err->msg[0] ? RT_ERR_IO : rt_err_set(err, RT_ERR_IO, "grpc: no credentials");
    }
    grpc_channel *ch = grpc_channel_create(p->target, cc, NULL);
    grpc_channel_credentials_release(cc);
    grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
    gpr_timespec dl = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
                                   gpr_time_from_millis(p->timeout_ms, GPR_TIMESPAN));
    grpc_slice m = grpc_slice_from_copied_string(method);
    grpc_call *call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, m, NULL, dl,
                                               NULL);
    grpc_slice_unref(m);
    grpc_slice body = grpc_slice_from_copied_buffer((const char *)in, len);
    grpc_byte_buffer *req = grpc_raw_byte_buffer_create(&body, 1);
    grpc_slice_unref(body);
    char bearer[1100];
    grpc_metadata md;
    memset(&md, 0, sizeof md);
    if (p->token) {
        snprintf(bearer, sizeof bearer, "Bearer %s", p->token);
        md.key = grpc_slice_from_static_string("authorization");
        md.value = grpc_slice_from_copied_string(bearer);
    }
    grpc_metadata_array got_md, trailers;
    grpc_metadata_array_init(&got_md);
    grpc_metadata_array_init(&trailers);
    grpc_byte_buffer *ans = NULL;
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    grpc_op ops[6];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = p->token ? 1 : 0;
    ops[0].data.send_initial_metadata.metadata = p->token ? &md : NULL;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = req;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &got_md;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &ans;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &trailers;
    ops[5].data.recv_status_on_client.status = &status;
    ops[5].data.recv_status_on_client.status_details = &details;
    if (!call || grpc_call_start_batch(call, ops, 6, &ops, NULL) != GRPC_CALL_OK) {
        st = rt_err_set(err, RT_ERR_IO, "grpc: cannot start the call to %s", p->target);
    } else {
        /* the deadline ends the call: its batch completes by then */
        grpc_event ev =
            grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        (void)ev;
        *code = (int)status;
        snprintf(msg, msg_len, "%.*s", (int)GRPC_SLICE_LENGTH(details),
                 (const char *)GRPC_SLICE_START_PTR(details));
        read_answer(ans, out);
        if (rt_buf_failed(out))
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    if (ans)
        grpc_byte_buffer_destroy(ans);
    grpc_byte_buffer_destroy(req);
    grpc_slice_unref(details);
    if (p->token)
        grpc_slice_unref(md.value);
    grpc_metadata_array_destroy(&got_md);
    grpc_metadata_array_destroy(&trailers);
    if (call)
        grpc_call_unref(call);
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(cq);
    grpc_channel_destroy(ch);
    grpc_shutdown();
    return st;
}
