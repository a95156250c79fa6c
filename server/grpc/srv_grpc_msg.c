/*
 * srv_grpc_msg.c — what every gRPC method of the room shares: predictd's
 * errors as gRPC status codes (and the REST status each stands for, which
 * the metrics count), packing an answer message, and the refusal of a
 * request that is not the method's message. Below the methods
 * (srv_grpc_methods.c, srv_grpc_tfs*.c), which all call it.
 */
#include "srv_grpc_internal.h"

#include <stdio.h>

int srv_grpc_status_of(rt_status st)
{
    switch (st) {
    case RT_OK: return SRV_GRPC_OK;
    case RT_ERR_INVALID:
    case RT_ERR_FORMAT:
    case RT_ERR_LIMIT: return SRV_GRPC_INVALID_ARGUMENT;
    case RT_ERR_NOTFOUND: return SRV_GRPC_NOT_FOUND;
    case RT_ERR_UNSUPPORTED: return SRV_GRPC_UNAVAILABLE;
    case RT_ERR_NOMEM: return SRV_GRPC_RESOURCE_EXHAUSTED;
    default: return SRV_GRPC_INTERNAL;
    }
}

int srv_grpc_pack(const ProtobufCMessage *msg, rt_buf *out)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    if (rt_buf_reserve(out, n + 1) != 0)
        return SRV_GRPC_RESOURCE_EXHAUSTED;
    protobuf_c_message_pack(msg, (uint8_t *)out->data + out->len);
    out->len += n;
    return SRV_GRPC_OK;
}

int srv_grpc_bad_message(char *msg, const char *what)
{
    snprintf(msg, SRV_GRPC_MSG, "the request is not a valid %s message", what);
    return SRV_GRPC_INVALID_ARGUMENT;
}

unsigned srv_grpc_http_of(int code)
{
    switch (code) {
    case SRV_GRPC_OK: return 200;
    case SRV_GRPC_INVALID_ARGUMENT: return 400;
    case SRV_GRPC_NOT_FOUND: return 404;
    case SRV_GRPC_UNAVAILABLE: return 503;
    case SRV_GRPC_RESOURCE_EXHAUSTED: return 429;
    case SRV_GRPC_DEADLINE_EXCEEDED: return 504;
    case SRV_GRPC_CANCELLED: return 499; /* REST's client gone */
    default: return 500;
    }
}
