/* lnkit: run OpenBLAS on the best kernel for the CPU.
 *
 * OpenBLAS (built with DYNAMIC_ARCH, as Debian's is) picks its compute kernel
 * once, when the library is loaded, before main runs: from OPENBLAS_CORETYPE if
 * set, else from its own CPU detection.  That detection does not know every CPU
 * (Debian's 0.3.21 fell back to its AVX2 "Haswell" kernel on an AVX-512 AMD
 * EPYC, 40% slower in DGEMM), and the choice cannot be changed once loaded.
 *
 * lnk_blas_setup(), called first thing in main, compares the kernel OpenBLAS
 * loaded (openblas_get_corename()) with the CPU's vector extensions (cpuid and
 * the OS's XCR0 state: AVX, AVX2 + FMA, AVX-512 F/DQ/BW/VL) and,
 * when the loaded kernel uses a narrower vector ISA than the CPU offers, sets
 * OPENBLAS_CORETYPE and re-executes the program once (/proc/self/exe with the
 * same arguments, read from /proc/self/cmdline; LNK_BLAS_REEXEC in the
 * environment guards against a loop).  Where OpenBLAS already uses the
 * extensions it is left alone.  Nothing has been computed or written by then,
 * so the re-executed program is the same run on a better kernel.
 *
 * The kernel per CPU (OpenBLAS 0.3.21 names):
 *   AVX-512 F, DQ, BW, VL            SkylakeX (Cooperlake, which OpenBLAS picks
 *                                    itself on BF16 CPUs, has the same
 *                                    double-precision kernels; 0.3.21 does not
 *                                    accept it in OPENBLAS_CORETYPE)
 *   AVX2 and FMA                     Haswell
 *   AVX                              Sandybridge
 * A loaded kernel of the same class (Cooperlake on an AVX-512 CPU, Zen on an
 * AVX2 one) counts as using the extensions; a name this table does not know
 * is left alone.
 *
 * Control (environment):
 *   OPENBLAS_CORETYPE=NAME   the user's own choice: always wins, never changed.
 *   LNK_BLAS_TEST_FALLBACK=1 (tests) treat OPENBLAS_CORETYPE as OpenBLAS's own
 *                            fallback, to watch the switch on a weak kernel.
 *   LNK_BLAS_KERNEL=auto     (default) as above.
 *   LNK_BLAS_KERNEL=keep     never change OpenBLAS's choice.
 *   LNK_BLAS_KERNEL=NAME     use kernel NAME (one of the table's or an older
 *                            OpenBLAS name); an error if the CPU lacks its ISA.
 *   OPENBLAS_VERBOSE=2       OpenBLAS prints "Core: NAME" each time it loads.
 * An OpenBLAS built without DYNAMIC_ARCH ignores OPENBLAS_CORETYPE: then
 * nothing is done.
 *
 * Programs that link the library: call lnk_blas_setup() at the very start of
 * main, before any output, threads, or MPI_Init (it may not return: exec).  A
 * program that must not re-exec (a Python interpreter loading liblnkit through
 * ctypes, which has loaded OpenBLAS already) calls lnk_blas_advice() and, if it
 * names a kernel, starts itself again with OPENBLAS_CORETYPE set to it, or
 * asks its user to (`OPENBLAS_CORETYPE=NAME python3 ...`).
 *
 * x86-64 only; elsewhere the CPU shows no extension and nothing is changed. */
#ifndef LNKIT_BLAS_H
#define LNKIT_BLAS_H

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU's vector extensions, each 1 if the CPU has it and the OS saves its
 * registers (XCR0), else 0. */
typedef struct {
    int avx, avx2, fma;
    int avx512f, avx512dq, avx512bw, avx512vl;
} lnk_cpu_features;

/* Read this CPU's extensions (cpuid, xgetbv). */
void lnk_cpu_detect(lnk_cpu_features *f);

/* The best OpenBLAS kernel for f (table above), or NULL if none of them fits. */
const char *lnk_blas_best_kernel(const lnk_cpu_features *f);

/* The vector class of an OpenBLAS kernel name (case-insensitive): 3 AVX-512,
 * 2 AVX2, 1 AVX, 0 older (SSE), -1 a name the table does not know.  The
 * canonical spelling goes to *canon if canon is not NULL. */
int lnk_blas_kernel_class(const char *name, const char **canon);

/* The decision of lnk_blas_setup, as a pure function of its inputs (tested on
 * made-up CPUs and names).
 *   loaded        the kernel OpenBLAS loaded (openblas_get_corename())
 *   dynamic       1 if OpenBLAS honours OPENBLAS_CORETYPE (DYNAMIC_ARCH)
 *   user_coretype OPENBLAS_CORETYPE as the user set it, or NULL
 *   setting       LNK_BLAS_KERNEL, or NULL (= auto)
 *   reexeced      the previous kernel if this process is lnk_blas_setup's re-exec
 *                 (LNK_BLAS_REEXEC), else NULL
 * Sets *switch_to to the kernel to re-exec with, or NULL to stay, and writes a
 * one-line note on the choice to note (size n).  Returns LNK_OK, or LNK_EINVAL
 * (message in lnk_errmsg) for an unknown LNK_BLAS_KERNEL or one the CPU cannot
 * run. */
int lnk_blas_decide(const lnk_cpu_features *f, const char *loaded, int dynamic,
                    const char *user_coretype, const char *setting, const char *reexeced,
                    const char **switch_to, char *note, int n);

/* At the start of main: decide, and re-exec on the better kernel if needed (does
 * not return then).  Returns LNK_OK when the process keeps running (also if the
 * exec failed: the note says so), or LNK_EINVAL for a bad LNK_BLAS_KERNEL.
 * Calls after the first do nothing. */
int lnk_blas_setup(void);

/* The kernel lnk_blas_setup would switch to in this process, or NULL (for
 * programs that cannot re-exec; see above).  Same errors as lnk_blas_setup:
 * NULL with lnk_errmsg set. */
const char *lnk_blas_advice(void);

/* The kernel OpenBLAS uses now, and lnk_blas_setup's one-line note
 * ("" before setup), e.g. "auto: OpenBLAS chose Haswell, the CPU has AVX-512:
 * re-executed on Cooperlake". */
const char *lnk_blas_kernel(void);
const char *lnk_blas_note(void);

#ifdef __cplusplus
}
#endif
#endif
