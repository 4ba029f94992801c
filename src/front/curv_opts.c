/* The shared options of curvature runs (front/curv_opts.h). */
#include "front/curv_opts.h"

const cli_choice cli_lanczos_modes[] = {{"full", LNK_LANCZOS_FULL}, {"light", LNK_LANCZOS_LIGHT},
                                        {NULL, 0}};
const cli_choice cli_reorths[] = {{"partial", LNK_REORTH_PARTIAL}, {"always", LNK_REORTH_ALWAYS},
                                  {NULL, 0}};

void cli_set_cache(lnk_hessian *h, long mb)
{
    if (mb >= 0 && lnk_hessian_set_cache(h, (size_t)mb * 1048576) != LNK_OK)
        cli_die_lib();
}
