/*
 * rt_mpi.c — whether an MPI launcher started this process, for the
 * binaries that become ranks under mpirun (predict-train, predict-tune):
 * they initialise MPI only then, so a plain run never pays MPI_Init. And the
 * reverse for their children: a process a rank starts (a tuning trial) must
 * not take itself for that rank.
 */
#include "rt_core.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The launchers' variables: Open MPI's own, PMIx (srun --mpi=pmix, Open MPI
 * 4+), PMI-1/2 (MPICH, Slurm). */
static const char *const launcher_prefixes[] = {"OMPI_", "PMIX_", "PMI_", NULL};

int rt_mpi_launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", NULL};
    for (size_t i = 0; vars[i]; i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

void rt_mpi_forget_launcher(void)
{
    extern char **environ;
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; e && *e; e++) {
            const char *eq = strchr(*e, '=');
            size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
            int theirs = 0;
            for (size_t i = 0; launcher_prefixes[i]; i++)
                theirs |= strncmp(*e, launcher_prefixes[i], strlen(launcher_prefixes[i])) == 0;
            if (!theirs || len >= 256)
                continue;
            char name[256];
            memcpy(name, *e, len);
            name[len] = '\0';
            unsetenv(name); /* environ changed: walk it again */
            again = 1;
            break;
        }
    }
}
