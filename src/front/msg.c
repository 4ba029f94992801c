/* Messages of the programs (front.h): errors, warnings, notes, each line
 * starting with the program's name; errors end the run with status 2. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "front/front.h"

static char name[64] = "lnkit";
static int setup = 1;
static int at_line_start = 1; /* cli_say: the next text starts a line */
int cli_quiet = 0;

void cli_set_name(const char *n) { snprintf(name, sizeof name, "%s", n); }
const char *cli_name(void) { return name; }
void cli_setup_done(void) { setup = 0; }
int cli_root(void) { return lnk_comm_rank() == 0; }

void cli_say(const char *fmt, ...)
{
    if (cli_quiet || !cli_root())
        return;
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    /* "NAME: " before every line, also of a line written in several calls */
    for (char *p = msg; *p;) {
        char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (at_line_start)
            fprintf(stderr, "%s: ", name);
        fwrite(p, 1, len, stderr);
        at_line_start = nl != NULL;
        p += len;
    }
    free(msg);
}

void cli_warn(const char *fmt, ...)
{
    if (!cli_root())
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s%s: warning: %s\n", at_line_start ? "" : "\n", name, msg);
    at_line_start = 1;
}

void cli_die(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* nothing half-written stays behind (the temporary files of this rank) */
    lnk_output_abort_all();
    /* one line: control characters of names and values escaped (lnk_error);
     * a library message that starts with the command's own name ("eigs:
     * checkpoint ...") does not repeat it after "lnkit eigs: " (or
     * "placements: ") */
    const char *cmd = strrchr(name, ' '), *m = msg;
    cmd = cmd ? cmd + 1 : name; /* "lnkit eigs": "eigs"; a study: its name */
    size_t lc = strlen(cmd);
    if (lc && !strncmp(msg, cmd, lc) && msg[lc] == ':' && msg[lc + 1] == ' ')
        m += lc + 2;
    lnk_error(LNK_EINVAL, "%s", m);
    snprintf(msg, sizeof msg, "%s", lnk_errmsg());
    const char *nl = at_line_start ? "" : "\n";
    int rank = lnk_comm_rank();
    if (lnk_comm_size() == 1) {
        fprintf(stderr, "%s%s: %s\n", nl, name, msg);
        exit(2);
    }
    /* Several ranks.  While setting up (flags, files, shards) every rank's
     * next collective step is an agreement (cli_check), so a failing rank
     * joins it here: all learn of the failure ("rank R: ..." if it is not
     * the same everywhere), rank 0 prints it once, and all end cleanly. */
    if (setup && !lnk_comm_failed()) {
        lnk_error(LNK_EINVAL, "%s", msg);
        lnk_comm_agree(LNK_EINVAL);
        snprintf(msg, sizeof msg, "%s", lnk_errmsg());
    }
    if (lnk_comm_failed()) {
        if (rank == 0)
            fprintf(stderr, "%s%s: %s\n", nl, name, msg);
        lnk_comm_finalize();
        exit(2);
    }
    /* A rank failing alone outside an agreement: it names itself (after a
     * pause that lets rank 0 win if all fail alike) and ends the job. */
    if (rank == 0) {
        fprintf(stderr, "%s%s: %s\n", nl, name, msg);
    } else {
        usleep(300000);
        fprintf(stderr, "%s: rank %d: %s\n", name, rank, msg);
    }
    lnk_comm_abort(2);
    exit(2); /* lnk_comm_abort returns in a job of one process */
}

void cli_die_lib(void) { cli_die("%s", lnk_errmsg()); }

void cli_check(int status)
{
    if (lnk_comm_agree(status) != LNK_OK)
        cli_die_lib();
}

void *cli_alloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        cli_die("out of memory (%zu bytes)", n);
    return p;
}

int cli_not_converged(int n_bad, int n_req, double worst_rel, double tol, int steps,
                      int max_steps, const char *hint)
{
    if (n_bad <= 0)
        return 0;
    cli_warn("%d of %d requested eigenpairs did not converge (worst residual %.3g max|l|, "
             "tolerance %.3g; %d of %d Lanczos steps used)%s%s; the results are written, with "
             "converged = 0 for them; exit status %d", n_bad, n_req, worst_rel, tol, steps,
             max_steps, hint ? ": " : "", hint ? hint : "", CLI_EXIT_NOT_CONVERGED);
    return CLI_EXIT_NOT_CONVERGED;
}
