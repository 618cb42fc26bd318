/* Scenarios of the C API written in C99 (c_api_calls.c), called from c_api_test.cpp. */
#ifndef SWITCHYARD_TEST_C_API_CALLS_H
#define SWITCHYARD_TEST_C_API_CALLS_H

#include <switchyard/switchyard.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0 on success, else the failing step with a sentence in note. */
int c_api_ce_round_trip(const char* plugin_path, char* note, size_t note_size);
int c_api_norm_round_trip(const char* plugin_path, char* note, size_t note_size);
int c_api_thread_group(char* note, size_t note_size);
/* The status and message of a failed sy_ce_create; *out_was_null: the handle was reset. */
sy_status c_api_missing_backend(const char* plugin_path, char* message, size_t message_size,
                                int* out_was_null);
/* 0: struct_size 0; 1: deterministic 5; 2: a NULL argv entry. */
sy_status c_api_bad_options(int which, char* message, size_t message_size);
sy_status c_api_null_handles(char* message, size_t message_size);

#ifdef __cplusplus
}
#endif

#endif
