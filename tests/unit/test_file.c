/* test_file.c — rt_read_file, the one way every module reads a whole file:
 * contents and length exact (empty, small, larger than the first read),
 * NUL-terminated, relative to a directory descriptor, the size cap, a
 * missing file, a directory and a FIFO refused without blocking (and read
 * to its end when the caller allows pipes); rt_write_file: the new bytes
 * replace the old whole, an existing file's mode is kept, no temp file is
 * left, and a directory that does not exist is named. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "rt.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test_file.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *name, const char *data, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    if (n)
        assert_int_equal(fwrite(data, 1, n, fp), n);
    assert_int_equal(fclose(fp), 0);
}

static void test_contents(void **state)
{
    (void)state;
    char path[128];
    char *s = NULL;
    size_t n = 99;
    rt_err err = {{0}};
    put("empty", "", 0);
    snprintf(path, sizeof path, "%s/empty", dir);
    assert_int_equal(rt_read_file(AT_FDCWD, path, 100, 0, &s, &n, &err), RT_OK);
    assert_int_equal(n, 0);
    assert_string_equal(s, "");
    free(s);

    static const char small[] = "a\0b\nc"; /* NUL bytes are data */
    put("small", small, sizeof small - 1);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    assert_int_equal(rt_read_file(dfd, "small", 5, 0, &s, &n, &err), RT_OK);
    assert_int_equal(n, 5);
    assert_memory_equal(s, small, 6); /* and the terminating NUL */
    free(s);
    /* one byte over the cap */
    assert_int_equal(rt_read_file(dfd, "small", 4, 0, &s, &n, &err), RT_ERR_LIMIT);
    assert_null(s);
    assert_non_null(strstr(err.msg, "small: 5 bytes exceeds the limit of 4"));

    /* larger than any first guess: 300 KB of a pattern */
    size_t big = 300000;
    char *b = malloc(big);
    assert_non_null(b);
    for (size_t i = 0; i < big; i++)
        b[i] = (char)('a' + i % 23);
    put("big", b, big);
    assert_int_equal(rt_read_file(dfd, "big", big, 0, &s, &n, &err), RT_OK);
    assert_int_equal(n, big);
    assert_memory_equal(s, b, big);
    assert_int_equal(s[big], '\0');
    free(s);
    free(b);
    close(dfd);
}

static void test_refusals(void **state)
{
    (void)state;
    char path[128];
    char *s = NULL;
    rt_err err = {{0}};
    snprintf(path, sizeof path, "%s/none", dir);
    assert_int_equal(rt_read_file(AT_FDCWD, path, 100, 0, &s, NULL, &err), RT_ERR_NOTFOUND);
    assert_non_null(strstr(err.msg, "none: cannot open: No such file or directory"));
    assert_null(s);
    assert_int_equal(rt_read_file(AT_FDCWD, dir, 100, 0, &s, NULL, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "not a regular file"));

    /* a FIFO with no writer: refused at once, not waited on */
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(rt_read_file(AT_FDCWD, path, 100, 0, &s, NULL, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "fifo: not a regular file"));

    /* allowed: read to the writer's end, capped */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(path, O_WRONLY);
        ssize_t w = fd >= 0 ? write(fd, "piped text", 10) : -1;
        _exit(w == 10 ? 0 : 1);
    }
    size_t n = 0;
    assert_int_equal(rt_read_file(AT_FDCWD, path, 100, RT_READ_ANY_FILE, &s, &n, &err), RT_OK);
    assert_int_equal(n, 10);
    assert_string_equal(s, "piped text");
    free(s);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_write(void **state)
{
    (void)state;
    char path[128], *data = NULL;
    size_t len = 0;
    rt_err err;
    snprintf(path, sizeof path, "%s/report.html", dir);
    assert_int_equal(rt_write_file(path, "first version", 13, &err), RT_OK);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0644);
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(rt_write_file(path, "second", 6, &err), RT_OK);
    assert_int_equal(rt_read_file(AT_FDCWD, path, 100, 0, &data, &len, &err), RT_OK);
    assert_int_equal(len, 6);
    assert_memory_equal(data, "second", 6);
    free(data);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "test \"$(ls '%s' | grep -c tmp)\" = 0", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/no/such/dir/r.html", dir);
    assert_int_equal(rt_write_file(path, "x", 1, &err), RT_ERR_IO);
    assert_non_null(strstr(err.msg, "/no/such/dir/r.html.tmp-"));
    assert_non_null(strstr(err.msg, "No such file or directory"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contents),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_write),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
