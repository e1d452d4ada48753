/* SPDX-License-Identifier: Apache-2.0 */
/* One error table for broker, controller, client and wire. The numeric
 * value of each enum member is its wire code, so no mapping is needed.
 * definite = the request was certainly not applied; an indefinite error
 * (timeout, lost connection, any failure after the broker began to write)
 * means it may have been. Every answer given after an append began must
 * use an indefinite code (the *_AFTER_APPEND codes exist for that). */
#ifndef COMMON_ERR_H
#define COMMON_ERR_H

#include <stdbool.h>
#include <stddef.h>

#define WEIR_MUST_CHECK   __attribute__((warn_unused_result))
#define WEIR_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* X(NAME, code, retriable, definite, description) */
#define WEIR_ERR_TABLE(X)                                                      \
    X(OK, 0, false, true, "no error")                                          \
    X(UNKNOWN, 1, false, false, "unexpected internal error")                   \
    X(MALFORMED, 2, false, true, "malformed request")                          \
    X(NOMEM, 3, true, true, "out of memory")                                   \
    X(IO, 4, true, false, "input/output error")                                \
    X(CORRUPT, 5, false, true, "corrupt data")                                 \
    X(FRAME_TOO_LARGE, 6, false, true, "frame exceeds the size limit")         \
    X(UNSUPPORTED_API, 7, false, true, "unknown or unsupported call")          \
    X(UNKNOWN_TOPIC_OR_PARTITION, 8, true, true, "unknown topic or partition") \
    X(INVALID_TOPIC, 9, false, true, "invalid topic name")                     \
    X(TOPIC_EXISTS, 10, false, true, "topic already exists")                   \
    X(INVALID_PARTITIONS, 11, false, true, "invalid partition count")          \
    X(INVALID_REPLICATION_FACTOR, 12, false, true,                             \
      "invalid replication factor")                                            \
    X(INVALID_CONFIG, 13, false, true, "invalid configuration")                \
    X(OFFSET_OUT_OF_RANGE, 14, false, true, "offset out of range")             \
    X(CORRUPT_MESSAGE, 15, false, true,                                        \
      "record batch failed validation (CRC, bounds or offsets)")               \
    X(MESSAGE_TOO_LARGE, 16, false, true, "record batch too large")            \
    X(INVALID_REQUEST, 17, false, true, "invalid request")                     \
    X(NOT_LEADER, 18, true, true, "not the leader for this partition")         \
    X(LEADER_NOT_AVAILABLE, 19, true, true, "leader not available")            \
    X(NOT_ENOUGH_REPLICAS, 20, true, true, "not enough in-sync replicas")      \
    X(REQUEST_TIMED_OUT, 21, true, false, "request timed out")                 \
    X(NETWORK, 22, true, false, "connection lost or refused")                  \
    X(STORAGE, 23, true, false,                                                \
      "storage error on the broker (part of the write may be on disk)")        \
    X(UNSUPPORTED_COMPRESSION, 24, false, true,                                \
      "unsupported compression codec")                                         \
    X(INVALID_ARGUMENT, 25, false, true, "invalid argument")                   \
    X(UNSUPPORTED_VERSION, 26, false, true, "unsupported record format")       \
    X(POLICY_VIOLATION, 27, false, true, "refused by policy")                  \
    X(SHUTTING_DOWN, 28, true, true, "broker is shutting down")                \
    X(FENCED_LEADER_EPOCH, 29, true, true, "leader epoch is stale")            \
    X(UNKNOWN_LEADER_EPOCH, 30, true, true, "leader epoch is newer")           \
    X(CONFIG, 31, false, true, "bad configuration")                            \
    X(NOT_FOUND, 32, false, true, "not found")                                 \
    X(INVALID_TIMESTAMP, 33, false, true, "invalid timestamp")                 \
    X(OUT_OF_ORDER_SEQUENCE, 34, false, true,                                  \
      "producer sequence out of order (a gap, or a retry too old to know)")    \
    X(DUPLICATE_SEQUENCE, 35, false, true,                                     \
      "batch already written (a retry); base_offset says where")               \
    X(INVALID_PRODUCER_EPOCH, 36, false, true,                                 \
      "producer epoch is stale (fenced by a newer one)")                       \
    X(UNKNOWN_PRODUCER_ID, 37, true, true,                                     \
      "producer id unknown to the partition (state expired or lost)")          \
    X(OFFSET_NOT_AVAILABLE, 38, true, true,                                    \
      "a new leader's high watermark is not established yet")                  \
    X(COORDINATOR_NOT_AVAILABLE, 39, true, true,                               \
      "the group coordinator is not available")                                \
    X(NOT_COORDINATOR, 40, true, true,                                         \
      "this broker does not coordinate the group")                             \
    X(COORDINATOR_LOAD_IN_PROGRESS, 41, true, true,                            \
      "the coordinator is loading the group's offsets partition")              \
    X(ILLEGAL_GENERATION, 42, false, true,                                     \
      "the generation is not the group's current one (join again)")            \
    X(UNKNOWN_MEMBER_ID, 43, false, true,                                      \
      "the member is not in the group (join again)")                           \
    X(REBALANCE_IN_PROGRESS, 44, false, true,                                  \
      "the group is rebalancing (join again)")                                 \
    X(INVALID_SESSION_TIMEOUT, 45, false, true,                                \
      "session timeout outside the broker's allowed range")                    \
    X(INCONSISTENT_GROUP_PROTOCOL, 46, false, true,                            \
      "no assignment strategy or protocol type shared with the group")         \
    X(GROUP_NOT_FOUND, 47, false, true, "no such group")                       \
    X(NON_EMPTY_GROUP, 48, false, true, "the group has live members")          \
    X(INVALID_GROUP_ID, 49, false, true, "group id is empty or too long")      \
    X(SASL_AUTHENTICATION_FAILED, 50, false, true,                             \
      "authentication failed (unknown user, wrong password or replay)")        \
    X(UNSUPPORTED_SASL_MECHANISM, 51, false, true,                             \
      "SASL mechanism not enabled on this listener")                           \
    X(ILLEGAL_SASL_STATE, 52, false, true,                                     \
      "call not allowed before authentication, or out of order")               \
    X(TOPIC_AUTHORIZATION_FAILED, 53, false, true,                             \
      "not authorized for this topic")                                         \
    X(GROUP_AUTHORIZATION_FAILED, 54, false, true,                             \
      "not authorized for this group")                                         \
    X(CLUSTER_AUTHORIZATION_FAILED, 55, false, true,                           \
      "not authorized for this cluster operation")                             \
    X(INCONSISTENT_CLUSTER_ID, 56, false, true,                                \
      "the data directory belongs to another cluster")                         \
    X(LOG_OFFLINE, 66, true, true,                                             \
      "the partition's log is offline here after a storage failure or "        \
      "corruption (nothing was written or read); retry: it comes back or "     \
      "moves to another replica")                                              \
    X(NOT_ENOUGH_REPLICAS_AFTER_APPEND, 70, true, false,                       \
      "written to the leader's log, but the in-sync replicas fell below "      \
      "min.insync.replicas before it was replicated: it may or may not "       \
      "survive")                                                               \
    X(NOT_LEADER_AFTER_APPEND, 71, true, false,                                \
      "written to the leader's log, then the leadership moved before it was "  \
      "known to be replicated: it may or may not survive")                     \
    X(NOT_COORDINATOR_AFTER_APPEND, 72, true, false,                           \
      "the commit was written to the offsets log, then the coordinator moved " \
      "before it was replicated: it may or may not take effect")               \
    X(METADATA_DIVERGED, 76, false, true,                                      \
      "the controller's metadata history differs from the one this broker "    \
      "applied (a controller data dir restored from an older copy?)")          \
    X(METADATA_HISTORY_UNVERIFIABLE, 77, false, true,                          \
      "the controller no longer holds the history point this broker names, "   \
      "so it cannot show that its history is the same")                        \
    X(CONTROLLER_REFUSED, 78, true, true,                                      \
      "this broker refuses its controller (another cluster or another "        \
      "metadata history): nothing was sent to it")                             \
    X(NOT_CONTROLLER, 79, true, true,                                          \
      "this controller is not the active one (a quorum member that is not "    \
      "its leader): the answer names the active controller when it is known")

enum weir_err {
#define WEIR_ERR_ENUM(name, code, retr, def, desc) WEIR_E##name = code,
    WEIR_ERR_TABLE(WEIR_ERR_ENUM)
#undef WEIR_ERR_ENUM
};

/* Upper-case name ("NOT_LEADER"); "UNKNOWN_CODE" for codes not in the table. */
const char *weir_err_name(int code);
/* One-line description for humans. */
const char *weir_err_str(int code);
bool weir_err_retriable(int code);
/* True if an error with this code means "certainly not applied". */
bool weir_err_definite(int code);
/* Code for a name, or -1. Case-insensitive. */
int weir_err_from_name(const char *name);

/* Detail for an error: message, raw errno and failing call where one was
 * involved. Embedded by callers; no heap memory. */
struct err_detail {
    int code;      /* enum weir_err */
    int sys_errno; /* 0 when no system call failed */
    char msg[512];
};

void err_detail_clear(struct err_detail *ed);
/* Set code and message; returns code for `return err_set(...)`. NULL ed ok. */
int err_set(struct err_detail *ed, int code, const char *fmt, ...)
    WEIR_PRINTF(3, 4);
/* As err_set, appending ": <call>: <strerror(errno_value)>". */
int err_sys(struct err_detail *ed,
            int code,
            int errno_value,
            const char *call,
            const char *fmt,
            ...) WEIR_PRINTF(5, 6);
/* Prefix the existing message with more context ("opening x: <old>"). */
void err_wrap(struct err_detail *ed, const char *fmt, ...) WEIR_PRINTF(2, 3);
/* Map an errno value to an error code (ENOMEM, ENOSPC, ...). */
int err_from_errno(int errno_value);

#endif /* COMMON_ERR_H */
