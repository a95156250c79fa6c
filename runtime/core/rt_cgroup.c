/*
 * rt_cgroup.c — where this process sits in the cgroup v2 tree, and the walk
 * up to the root, for the limits a cgroup and each of its parents may set
 * (the daemon's cpu.max, the trainer's memory.max).
 */
#include "rt_core.h"

#include <stdio.h>
#include <string.h>

int rt_cgroup_path(const char *proc_cgroup, char *rel, size_t len)
{
    if (len < 2)
        return 0;
    rel[0] = '\0';
    FILE *f = fopen(proc_cgroup, "re");
    if (!f)
        return 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) != 0)
            continue;
        size_t n = strcspn(line + 3, "\n");
        if (n < len) {
            memcpy(rel, line + 3, n);
            rel[n] = '\0';
        }
        break;
    }
    fclose(f);
    return rel[0] == '/';
}

int rt_cgroup_parent(char *rel)
{
    char *slash = strrchr(rel, '/');
    if (!slash || (slash == rel && !rel[1]))
        return 0;
    slash[slash == rel ? 1 : 0] = '\0'; /* "/a" keeps its root "/" */
    return 1;
}
