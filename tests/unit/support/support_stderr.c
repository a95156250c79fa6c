/* support_stderr.c: stderr captured into a buffer around one call
 * (support_stderr.h). */
#include "support_stderr.h"

#include <stdlib.h>
#include <unistd.h>

support_capture support_stderr_begin(void)
{
    fflush(stderr);
    support_capture c = {dup(2), tmpfile()};
    if (c.saved < 0 || !c.tmp || dup2(fileno(c.tmp), 2) < 0)
        abort();
    return c;
}

void support_stderr_end(support_capture c, char *buf, size_t cap)
{
    fflush(stderr);
    dup2(c.saved, 2);
    close(c.saved);
    rewind(c.tmp);
    size_t n = fread(buf, 1, cap - 1, c.tmp);
    buf[n] = '\0';
    fclose(c.tmp);
}
