/*
 * srv_cpu.c — how many CPUs this process may really use: its affinity mask,
 * capped by the cgroup v2 CPU quota (cpu.max) of its own cgroup and of its
 * parents. Sizes the request thread pool (a container limited to 2 CPUs on a
 * 64-core host gets 2 threads, not 64).
 */
#include "srv.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int srv_cpu_quota_from_text(const char *text)
{
    char quota[32];
    unsigned long long period = 0;
    if (!text || sscanf(text, "%31s %llu", quota, &period) != 2 || period == 0)
        return 0;
    if (!strcmp(quota, "max"))
        return 0;
    char *end = NULL;
    unsigned long long q = strtoull(quota, &end, 10);
    if (!end || *end != '\0' || q == 0)
        return 0;
    unsigned long long cpus = (q + period - 1) / period;
    if (cpus > 1u << 20)
        cpus = 1u << 20;
    return (int)cpus;
}

/* Reads the first line of path into buf; false if it cannot. */
static bool read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    return ok;
}

/* The tightest quota along the cgroup's path (a parent may limit too). */
static int cgroup_quota(const char *cgroup_root, const char *proc_cgroup)
{
    char rel[1024];
    int best = 0;
    if (rt_cgroup_path(proc_cgroup, rel, sizeof rel))
        do {
            char path[2200];
            char text[128];
            snprintf(path, sizeof path, "%s%s/cpu.max", cgroup_root, rel[1] ? rel : "");
            if (read_line(path, text, sizeof text)) {
                int q = srv_cpu_quota_from_text(text);
                if (q > 0 && (best == 0 || q < best))
                    best = q;
            }
        } while (rt_cgroup_parent(rel));
    return best;
}

int srv_cpu_count(const char *cgroup_root, const char *proc_cgroup)
{
    int n = 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
    if (n <= 0)
        n = 1;
    int q = cgroup_quota(cgroup_root ? cgroup_root : "/sys/fs/cgroup",
                         proc_cgroup ? proc_cgroup : "/proc/self/cgroup");
    if (q > 0 && q < n)
        n = q;
    return n;
}
