/*
 * srv_repository.c — --model_repository DIR, Triton's layout: one folder
 * per model (DIR/NAME, its integer-named version folders inside, as any
 * base path), and an optional DIR/NAME/config.json with that model's keys
 * of a config file's "models" entry (version_policy, version_labels,
 * default_version, traffic_split, monitoring). The repository becomes the
 * text of a config file, which srv_config_parse validates as any other;
 * main_predictd.c reloads it when srv_repository_fingerprint changes, so
 * folders that come and go are models added and removed with a reload's
 * guarantees (atomic swap; a refused repository keeps the running config).
 * A folder's versions are loaded with the loader's own safety: a version
 * is served only once it loads and warms up whole.
 */
#include "srv_config_internal.h"
#include "srv_limits.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REPO_CONFIG "config.json"

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The model folders of dir, sorted: names that are valid model names, not
 * hidden, and directories (links followed). */
static rt_status list_models(const char *dir, char ***out, size_t *n_out, rt_err *err)
{
    *out = NULL;
    *n_out = 0;
    DIR *d = opendir(dir);
    if (!d)
        return rt_err_set(err, RT_ERR_IO, "--model_repository %s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    rt_status st = RT_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        if (nm[0] == '.' || !srv_name_valid(nm, strlen(nm)))
            continue;
        struct stat sb;
        if (fstatat(dirfd(d), nm, &sb, 0) != 0 || !S_ISDIR(sb.st_mode))
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            char **g = realloc(names, nc * sizeof *g);
            if (!g) {
                st = rt_err_set(err, RT_ERR_NOMEM, "--model_repository: out of memory");
                break;
            }
            names = g;
            cap = nc;
        }
        if (!(names[n] = strdup(nm))) {
            st = rt_err_set(err, RT_ERR_NOMEM, "--model_repository: out of memory");
            break;
        }
        n++;
    }
    closedir(d);
    if (st != RT_OK) {
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
        return st;
    }
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    *out = names;
    *n_out = n;
    return RT_OK;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* DIR/NAME/config.json's text, or NULL (no error) when there is none. */
static rt_status read_model_config(const char *dir, const char *name, char **text, size_t *len,
                                   rt_err *err)
{
    char path[4096];
    *text = NULL;
    *len = 0;
    if ((size_t)snprintf(path, sizeof path, "%s/%s/%s", dir, name, REPO_CONFIG) >= sizeof path)
        return rt_err_set(err, RT_ERR_INVALID, "--model_repository: %s: path too long", name);
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT)
        return RT_OK;
    return rt_file_read(AT_FDCWD, path, SRV_CONFIG_MAX_BYTES, 0, text, len, err);
}

rt_status srv_repository_config(const char *dir, char **out, rt_err *err)
{
    *out = NULL;
    char **names = NULL;
    size_t n = 0;
    rt_status st = list_models(dir, &names, &n, err);
    if (st != RT_OK)
        return st;
    cJSON *root = cJSON_CreateObject();
    cJSON *models = root ? cJSON_AddArrayToObject(root, "models") : NULL;
    if (!models) {
        st = rt_err_set(err, RT_ERR_NOMEM, "--model_repository: out of memory");
        goto done;
    }
    for (size_t i = 0; i < n && st == RT_OK; i++) {
        char *text = NULL;
        size_t len = 0;
        if ((st = read_model_config(dir, names[i], &text, &len, err)) != RT_OK)
            break;
        cJSON *m = NULL;
        if (text) {
            m = cJSON_ParseWithLength(text, len);
            free(text);
            if (!m || !cJSON_IsObject(m)) {
                cJSON_Delete(m);
                st = rt_err_set(err, RT_ERR_INVALID,
                                "--model_repository: %s/%s/" REPO_CONFIG
                                ": not a JSON object (a config file's \"models\" entry, without "
                                "name and base_path)",
                                dir, names[i]);
                break;
            }
            if (cJSON_GetObjectItemCaseSensitive(m, "name") ||
                cJSON_GetObjectItemCaseSensitive(m, "base_path")) {
                cJSON_Delete(m);
                st = rt_err_set(err, RT_ERR_INVALID,
                                "--model_repository: %s/%s/" REPO_CONFIG
                                ": name and base_path come from the folder, not the file",
                                dir, names[i]);
                break;
            }
        } else {
            m = cJSON_CreateObject();
        }
        char base[4096];
        snprintf(base, sizeof base, "%s/%s", dir, names[i]);
        char *abs = realpath(base, NULL);
        if (!m || !cJSON_AddStringToObject(m, "name", names[i]) ||
            !cJSON_AddStringToObject(m, "base_path", abs ? abs : base)) {
            free(abs);
            cJSON_Delete(m);
            st = rt_err_set(err, RT_ERR_NOMEM, "--model_repository: out of memory");
            break;
        }
        free(abs);
        cJSON_AddItemToArray(models, m);
    }
    if (st == RT_OK && !(*out = cJSON_PrintUnformatted(root)))
        st = rt_err_set(err, RT_ERR_NOMEM, "--model_repository: out of memory");
done:
    cJSON_Delete(root);
    free_names(names, n);
    return st;
}

uint64_t srv_repository_fingerprint(const char *dir)
{
    char **names = NULL;
    size_t n = 0;
    rt_err err;
    if (list_models(dir, &names, &n, &err) != RT_OK)
        return 0;
    uint64_t fp = rt_hash_fingerprint64("repo", 4);
    for (size_t i = 0; i < n; i++) {
        char *text = NULL;
        size_t len = 0;
        uint64_t parts[3] = {fp, rt_hash_fingerprint64(names[i], strlen(names[i]) + 1), 0};
        if (read_model_config(dir, names[i], &text, &len, &err) == RT_OK && text)
            parts[2] = rt_hash_fingerprint64(text, len);
        else if (text == NULL)
            parts[2] = 1; /* none, or unreadable: changes when it appears */
        free(text);
        fp = rt_hash_fingerprint64(parts, sizeof parts);
    }
    free_names(names, n);
    return fp ? fp : 1;
}
