/* Internal, test builds only (LNK_TESTING): the setters behind lnk_fault_set
 * (include/lnkit/fault.h), each beside the fault points it arms. */
#ifndef LNK_CORE_FAULT_INTERNAL_H
#define LNK_CORE_FAULT_INTERNAL_H
#ifdef LNK_TESTING
int lnk_fault_output_set(const char *spec); /* src/core/afile.c */
int lnk_fault_ckpt_set(const char *spec);   /* src/io/checkpoint.c */
#endif
#endif
