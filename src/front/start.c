/* The start of every program (lnkit, the studies, the benchmarks): the
 * user's settings from the environment, checked here and passed to the
 * library (which reads no environment variable), the restart on the best
 * OpenBLAS kernel (the library only decides: lnkit/blas.h), the clean-up of
 * unfinished outputs, the MPI job and the program's provenance record.  A
 * test build (LNK_TESTING) also arms the test hooks (lnkit/fault.h,
 * front/fault.c).  See cli_start in front/front.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front/front.h"
#include "lnkit/fault.h"
#include "lnkit/memory.h"

static lnk_prov *prov;
static char blas_note[256];

lnk_prov *cli_prov(void) { return prov; }
const char *cli_blas_note(void) { return blas_note; }

/* "PROG: message" (control characters escaped, lnk_error) and exit 2:
 * nothing has been computed or written yet. */
static _Noreturn __attribute__((format(printf, 1, 2))) void start_die(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lnk_error(LNK_EINVAL, "%s", msg);
    fprintf(stderr, "%s: %s\n", cli_name(), lnk_errmsg());
    exit(2);
}

/* An environment variable, NULL when unset or empty. */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* LNK_MEM_LIMIT_MB: a whole number of MiB >= 1 (lnkit/memory.h). */
static void mem_limit(void)
{
    const char *v = env("LNK_MEM_LIMIT_MB");
    if (!v)
        return;
    unsigned long long mb = 0;
    int ok = strspn(v, "0123456789") == strlen(v) && strlen(v) <= 15;
    if (ok)
        mb = strtoull(v, NULL, 10);
    if (!ok || mb < 1 || mb > SIZE_MAX / 1048576)
        start_die("LNK_MEM_LIMIT_MB: expected a whole number of MiB from 1 to %zu, got '%s'",
                  (size_t)(SIZE_MAX / 1048576), v);
    lnk_memory_set_limit((size_t)mb * 1048576);
}

static char **self_argv(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap + 1);
    for (ssize_t r; buf; len += (size_t)r) {
        if (len == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR) {
            r = 0;
            continue;
        }
        if (r <= 0)
            break;
    }
    close(fd);
    if (!buf || len == 0) {
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    size_t argc = 0;
    for (size_t i = 0; i < len; i++)
        argc += buf[i] == '\0';
    if (buf[len - 1] != '\0')
        argc++;
    char **argv = malloc((argc + 1) * sizeof *argv);
    if (!argv) {
        free(buf);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < len && k < argc; i += strlen(buf + i) + 1)
        argv[k++] = buf + i;
    argv[k] = NULL;
    return argv;
}

/* Decide the kernel (lnk_blas_choose) and, for a better one, execute this
 * program again on it with the same arguments (once: LNK_BLAS_REEXEC). */
static void blas_start(void)
{
    const char *setting = env("LNK_BLAS_KERNEL"), *user = env("OPENBLAS_CORETYPE");
    char was_re[64] = "";
    if (env("LNK_BLAS_REEXEC"))
        snprintf(was_re, sizeof was_re, "%s", env("LNK_BLAS_REEXEC"));
#ifdef LNK_TESTING
    /* LNK_BLAS_TEST_FALLBACK=1: treat OPENBLAS_CORETYPE as OpenBLAS's own
     * fallback, not the user's choice, so that a test can load a weaker
     * kernel and watch the switch */
    const char *t = env("LNK_BLAS_TEST_FALLBACK");
    if (t && !strcmp(t, "1") && !was_re[0])
        user = NULL;
#endif
    const char *to = NULL;
    int st = lnk_blas_choose(setting, user, was_re[0] ? was_re : NULL, &to, blas_note,
                             (int)sizeof blas_note);
    /* the guard served its purpose: programs this one starts decide afresh
     * (and keep the OPENBLAS_CORETYPE they inherit) */
    unsetenv("LNK_BLAS_REEXEC");
    if (st != LNK_OK)
        start_die("%s", lnk_errmsg());
    if (!to)
        return;
    const char *was = lnk_blas_kernel();
    char **argv = self_argv();
    if (argv && setenv("OPENBLAS_CORETYPE", to, 1) == 0 && setenv("LNK_BLAS_REEXEC", was, 1) == 0) {
        fflush(NULL);
        execv("/proc/self/exe", argv);
    }
    int err = errno;
    unsetenv("LNK_BLAS_REEXEC");
    unsetenv("OPENBLAS_CORETYPE");
    snprintf(blas_note, sizeof blas_note, "auto: OpenBLAS chose %s, the CPU suits %s, but the "
             "re-exec failed (%s): kept %s", was, to,
             argv ? strerror(err) : "no /proc/self/cmdline", was);
    if (argv)
        free(argv[0]);
    free(argv);
}

/* Test builds: the hooks of lnkit/fault.h and front/fault.c from the
 * environment; a bad spec is refused as any bad setting. */
static void test_hooks(void)
{
#ifdef LNK_TESTING
    static const struct {
        const char *var;
        int kind;
    } hooks[] = {{"LNK_OUTPUT_FAULT", LNK_FAULT_OUTPUT}, {"LNK_CKPT_FAULT", LNK_FAULT_CKPT}};
    for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++)
        if (lnk_fault_set(hooks[i].kind, env(hooks[i].var)) != LNK_OK)
            start_die("%s: %s", hooks[i].var, lnk_errmsg());
    if (cli_fault_set(env("LNK_FAULT")) != LNK_OK)
        start_die("LNK_FAULT: %s", lnk_errmsg());
#endif
}

void cli_start_env(const char *prog)
{
    cli_set_name(prog); /* messages before cli_parse names the command */
    mem_limit();
    test_hooks();
    blas_start();
    if (!prov && (!(prov = lnk_prov_alloc()) || lnk_prov_blas_note(prov, blas_note) != LNK_OK))
        start_die("%s", lnk_errmsg());
}

void cli_start(int *argc, char ***argv, const char *prog)
{
    cli_start_env(prog);
    /* before any output file exists: a fatal signal removes the temporary ones */
    lnk_output_init();
    if (lnk_comm_init(argc, argv) != LNK_OK)
        start_die("%s", lnk_errmsg());
    /* the command line, exactly, for the sidecars */
    if (lnk_prov_args(prov, *argc, *argv) != LNK_OK)
        start_die("%s", lnk_errmsg());
    atexit(lnk_comm_finalize);
    /* under mpirun only rank 0 speaks on standard output (help, CSV, JSON) */
    if (lnk_comm_rank() != 0 && !freopen("/dev/null", "w", stdout))
        exit(2);
}
