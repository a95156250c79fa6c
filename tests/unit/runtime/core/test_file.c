/* test_file.c — rt_file_read, the one way every module reads a whole file:
 * contents and length exact (empty, small, larger than the first read),
 * NUL-terminated, relative to a directory descriptor, the size cap, a
 * missing file, a directory and a FIFO refused without blocking (and read
 * to its end when the caller allows pipes); rt_file_write: the new bytes
 * replace the old whole, an existing file's mode is kept, no temp file is
 * left, and a directory that does not exist is named; rt_file_write_tag
 * names its temp file with the caller's tag; rt_file_mkdirs makes every missing
 * component and names the one it cannot make; rt_file_rmtree_at removes a tree
 * (a missing one is fine) and removes a symbolic link without following it;
 * rt_file_rename_durable renames and names both paths when it cannot. */
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
    assert_int_equal(rt_file_read(AT_FDCWD, path, 100, 0, &s, &n, &err), RT_OK);
    assert_int_equal(n, 0);
    assert_string_equal(s, "");
    free(s);

    static const char small[] = "a\0b\nc"; /* NUL bytes are data */
    put("small", small, sizeof small - 1);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    assert_int_equal(rt_file_read(dfd, "small", 5, 0, &s, &n, &err), RT_OK);
    assert_int_equal(n, 5);
    assert_memory_equal(s, small, 6); /* and the terminating NUL */
    free(s);
    /* one byte over the cap */
    assert_int_equal(rt_file_read(dfd, "small", 4, 0, &s, &n, &err), RT_ERR_LIMIT);
    assert_null(s);
    assert_non_null(strstr(err.msg, "small: 5 bytes exceeds the limit of 4"));

    /* larger than any first guess: 300 KB of a pattern */
    size_t big = 300000;
    char *b = malloc(big);
    assert_non_null(b);
    for (size_t i = 0; i < big; i++)
        b[i] = (char)('a' + i % 23);
    put("big", b, big);
    assert_int_equal(rt_file_read(dfd, "big", big, 0, &s, &n, &err), RT_OK);
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
    assert_int_equal(rt_file_read(AT_FDCWD, path, 100, 0, &s, NULL, &err), RT_ERR_NOTFOUND);
    assert_non_null(strstr(err.msg, "none: cannot open: No such file or directory"));
    assert_null(s);
    assert_int_equal(rt_file_read(AT_FDCWD, dir, 100, 0, &s, NULL, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "not a regular file"));

    /* a FIFO with no writer: refused at once, not waited on */
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(rt_file_read(AT_FDCWD, path, 100, 0, &s, NULL, &err), RT_ERR_FORMAT);
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
    assert_int_equal(rt_file_read(AT_FDCWD, path, 100, RT_READ_ANY_FILE, &s, &n, &err), RT_OK);
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
    assert_int_equal(rt_file_write(path, "first version", 13, &err), RT_OK);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0644);
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(rt_file_write(path, "second", 6, &err), RT_OK);
    assert_int_equal(rt_file_read(AT_FDCWD, path, 100, 0, &data, &len, &err), RT_OK);
    assert_int_equal(len, 6);
    assert_memory_equal(data, "second", 6);
    free(data);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "test \"$(ls '%s' | grep -c tmp)\" = 0", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/no/such/dir/r.html", dir);
    assert_int_equal(rt_file_write(path, "x", 1, &err), RT_ERR_IO);
    assert_non_null(strstr(err.msg, "/no/such/dir/r.html.tmp-"));
    assert_non_null(strstr(err.msg, "No such file or directory"));
}

static void test_tag(void **state)
{
    (void)state;
    char path[160];
    rt_err err;
    snprintf(path, sizeof path, "%s/no/such/config.json", dir);
    assert_int_equal(rt_file_write_tag(path, ".editor-", "{}", 2, &err), RT_ERR_IO);
    char want[64];
    snprintf(want, sizeof want, "config.json.editor-%ld", (long)getpid());
    assert_non_null(strstr(err.msg, want));
    snprintf(path, sizeof path, "%s/config.json", dir);
    assert_int_equal(rt_file_write_tag(path, ".editor-", "{}", 2, &err), RT_OK);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "test \"$(ls -a '%s' | grep -c editor)\" = 0", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_trees(void **state)
{
    (void)state;
    char path[200], file[220];
    rt_err err;
    snprintf(path, sizeof path, "%s/t/a/b/c", dir);
    assert_int_equal(rt_file_mkdirs(path, &err), RT_OK);
    assert_int_equal(rt_file_mkdirs(path, &err), RT_OK); /* existing: fine */
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    snprintf(file, sizeof file, "%s/f", path);
    put("t/a/b/c/f", "x", 1);
    snprintf(file, sizeof file, "%s/t/a/b/c/f/g", dir); /* under a file */
    assert_int_equal(rt_file_mkdirs(file, &err), RT_ERR_IO);
    char want[220];
    snprintf(want, sizeof want, "mkdir %s/t/a/b/c/f/g: ", dir);
    assert_non_null(strstr(err.msg, want));
    assert_int_equal(rt_file_mkdirs("", &err), RT_ERR_INVALID);

    /* a link to a directory outside the tree: removed, not followed */
    char keep[200], link[220];
    snprintf(keep, sizeof keep, "%s/keep", dir);
    assert_int_equal(rt_file_mkdirs(keep, &err), RT_OK);
    put("keep/precious", "y", 1);
    snprintf(link, sizeof link, "%s/t/a/link", dir);
    assert_int_equal(symlink(keep, link), 0);
    snprintf(path, sizeof path, "%s/t", dir);
    assert_int_equal(rt_file_rmtree_at(AT_FDCWD, path), 0);
    assert_int_equal(lstat(path, &sb), -1);
    snprintf(file, sizeof file, "%s/keep/precious", dir);
    assert_int_equal(stat(file, &sb), 0);
    assert_int_equal(rt_file_rmtree_at(AT_FDCWD, path), 0); /* missing: fine */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    assert_int_equal(rt_file_rmtree_at(dfd, "keep"), 0);
    close(dfd);
    assert_int_equal(stat(keep, &sb), -1);

    char from[200], to[200];
    snprintf(from, sizeof from, "%s/from", dir);
    snprintf(to, sizeof to, "%s/to", dir);
    assert_int_equal(rt_file_rename_durable(from, to, &err), RT_ERR_IO);
    assert_non_null(strstr(err.msg, from));
    assert_non_null(strstr(err.msg, to));
    put("from", "z", 1);
    assert_int_equal(rt_file_rename_durable(from, to, &err), RT_OK);
    assert_int_equal(stat(to, &sb), 0);
    assert_int_equal(rt_file_fsync_dir("/nonexistent-dir-h10", &err), RT_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent-dir-h10"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contents),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_write),
        cmocka_unit_test(test_tag),
        cmocka_unit_test(test_trees),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
