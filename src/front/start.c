/* The start of every program (front.h): what must come before anything
 * else, in this order. */
#include <stdio.h>
#include <stdlib.h>
#include "front/front.h"
#include "lnkit/provenance.h"

void cli_start(int *argc, char ***argv, const char *prog)
{
    cli_set_name(prog);
    /* the best OpenBLAS kernel first: this may re-exec the program */
    if (lnk_blas_setup() != LNK_OK)
        cli_die_lib();
    /* before any output file exists: a fatal signal removes the temporary ones */
    lnk_output_init();
    if (lnk_comm_init(argc, argv) != LNK_OK) {
        fprintf(stderr, "%s: %s\n", prog, lnk_errmsg());
        exit(2);
    }
    atexit(lnk_comm_finalize);
    lnk_prov_args(*argc, *argv); /* the command line, exactly, for the sidecars */
    /* under mpirun only rank 0 speaks on standard output (help, CSV, JSON) */
    if (lnk_comm_rank() != 0 && !freopen("/dev/null", "w", stdout))
        exit(2);
}
