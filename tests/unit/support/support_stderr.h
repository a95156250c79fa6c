/* support_stderr.h: capturing what a call writes to stderr, for unit tests
 * that assert the exact text of a refusal. */
#ifndef SUPPORT_STDERR_H
#define SUPPORT_STDERR_H

#include <stdio.h>

typedef struct support_capture {
    int saved; /* the original fd 2 */
    FILE *tmp; /* where fd 2 points while capturing */
} support_capture;

/* Points fd 2 at a temporary file until support_stderr_end; aborts when it
 * cannot (the test could not check anything). */
support_capture support_stderr_begin(void);
/* Puts fd 2 back and copies what was written, NUL-terminated and cut to
 * cap - 1 bytes, into buf. */
void support_stderr_end(support_capture c, char *buf, size_t cap);

#endif
