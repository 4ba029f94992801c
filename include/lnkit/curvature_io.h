/* lnkit: CSV files of curvature results (the curvature routines compute;
 * this I/O module writes), through lnk_afile: atomic, all or nothing. */
#ifndef LNKIT_CURVATURE_IO_H
#define LNKIT_CURVATURE_IO_H

#include <stddef.h>
#include "lnkit/curvature.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Nodes: columns run,index,node,weight (one row per node of every run). */
int lnk_slq_write_nodes(const lnk_slq_result *r, const char *path);
/* Density: columns t,density. */
int lnk_density_write(const char *path, const double *t, const double *phi, size_t npts);

#ifdef __cplusplus
}
#endif
#endif
