/* lnk_fault_set, in test builds only (include/lnkit/fault.h). */
#include "lnkit/error.h"
#include "lnkit/fault.h"

#ifdef LNK_TESTING
#include "core/fault_internal.h"

int lnk_fault_set(int kind, const char *spec)
{
    switch (kind) {
    case LNK_FAULT_OUTPUT: return lnk_fault_output_set(spec);
    case LNK_FAULT_CKPT: return lnk_fault_ckpt_set(spec);
    }
    return lnk_error(LNK_EINVAL, "fault: unknown kind %d", kind);
}
#endif
