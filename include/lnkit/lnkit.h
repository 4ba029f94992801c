/* lnkit: umbrella header. */
#ifndef LNKIT_H
#define LNKIT_H
#include "lnkit/error.h"
#include "lnkit/blas.h"
#include "lnkit/config.h"
#include "lnkit/model.h"
#include "lnkit/safetensors.h"
#include "lnkit/sys.h"
#include "lnkit/io.h"
#include "lnkit/csv_table.h"
#include "lnkit/curvature.h"
#include "lnkit/curvature_io.h"
#include "lnkit/model_io.h"
#include "lnkit/hessian.h"
#include "lnkit/blockstats.h"
#include "lnkit/stats.h"
#include "lnkit/geometry.h"
#include "lnkit/corpus.h"
#include "lnkit/comm.h"
#include "lnkit/provenance.h"
#include "lnkit/sha256.h"
#endif
