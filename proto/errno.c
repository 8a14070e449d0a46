/*
 * errno.c -- text for baton's error codes, generated from BATON_ERRNO_MAP.
 */
#include "baton/baton_defs.h"

const char *baton_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define XX(name, val, msg) \
    case val:              \
        return msg;
        BATON_ERRNO_MAP(XX)
#undef XX
    default:
        return "unknown error";
    }
}

const char *baton_err_name(int err)
{
    switch (err) {
    case 0:
        return "OK";
#define XX(name, val, msg) \
    case val:              \
        return "BATON_" #name;
        BATON_ERRNO_MAP(XX)
#undef XX
    default:
        return "BATON_EUNKNOWN";
    }
}
