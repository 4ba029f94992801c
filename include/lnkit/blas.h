/* lnkit: run OpenBLAS on the best kernel for the CPU.
 *
 * OpenBLAS (built with DYNAMIC_ARCH, as Debian's is) picks its compute kernel
 * once, when the library is loaded, before main runs: from OPENBLAS_CORETYPE if
 * set, else from its own CPU detection.  That detection does not know every CPU
 * (Debian's 0.3.21 fell back to its AVX2 "Haswell" kernel on an AVX-512 AMD
 * EPYC, 40% slower in DGEMM), and the choice cannot be changed once loaded.
 *
 * lnk_blas_choose() compares the kernel OpenBLAS loaded
 * (openblas_get_corename()) with the CPU's vector extensions (cpuid and the
 * OS's XCR0 state: AVX, AVX2 + FMA, AVX-512 F/DQ/BW/VL) and, when the loaded
 * kernel uses a narrower vector ISA than the CPU offers, names the kernel to
 * run on.  The library only decides and reports: a program (its start-up,
 * src/front/start.c) then sets OPENBLAS_CORETYPE and executes itself again with
 * the same arguments, once (LNK_BLAS_REEXEC in its environment guards against
 * a loop), before it computes or writes anything, so the restarted program is
 * the same run on a better kernel.  Where OpenBLAS already uses the
 * extensions it is left alone.
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
 * The program's settings (read from its environment by the program, passed
 * in here; the library reads no environment variable):
 *   OPENBLAS_CORETYPE=NAME   the user's own choice: always wins, never changed
 *                            (user_coretype below).
 *   LNK_BLAS_KERNEL=auto     (default) as above (setting below).
 *   LNK_BLAS_KERNEL=keep     never change OpenBLAS's choice.
 *   LNK_BLAS_KERNEL=NAME     use kernel NAME (one of the table's or an older
 *                            OpenBLAS name); an error if the CPU lacks its ISA.
 *   OPENBLAS_VERBOSE=2       OpenBLAS prints "Core: NAME" each time it loads.
 * An OpenBLAS built without DYNAMIC_ARCH ignores OPENBLAS_CORETYPE: then
 * nothing is done.
 *
 * A program that cannot restart itself (a Python interpreter loading liblnkit
 * through ctypes, which has loaded OpenBLAS already) calls lnk_blas_advice()
 * and, if it names a kernel, asks its user to start it again with
 * OPENBLAS_CORETYPE set to it (`OPENBLAS_CORETYPE=NAME python3 ...`).
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

/* The decision of lnk_blas_choose, as a pure function of its inputs (tested on
 * made-up CPUs and names).
 *   loaded        the kernel OpenBLAS loaded (openblas_get_corename())
 *   dynamic       1 if OpenBLAS honours OPENBLAS_CORETYPE (DYNAMIC_ARCH)
 *   user_coretype OPENBLAS_CORETYPE as the user set it, or NULL
 *   setting       LNK_BLAS_KERNEL, or NULL (= auto)
 *   reexeced      the previous kernel if this process is a program's restart on
 *                 the chosen kernel (LNK_BLAS_REEXEC), else NULL
 * Sets *switch_to to the kernel to restart on, or NULL to stay, and writes a
 * one-line note on the choice to note (size n).  Returns LNK_OK, or LNK_EINVAL
 * (message in lnk_errmsg) for an unknown LNK_BLAS_KERNEL or one the CPU cannot
 * run. */
int lnk_blas_decide(const lnk_cpu_features *f, const char *loaded, int dynamic,
                    const char *user_coretype, const char *setting, const char *reexeced,
                    const char **switch_to, char *note, int n);

/* lnk_blas_decide on this CPU and the kernel OpenBLAS loaded: setting,
 * user_coretype and reexeced as above (NULL: not set).  *switch_to: the
 * kernel the program should restart on, or NULL; note: the one-line note on
 * the choice (size n; the program records it: lnk_prov_blas_note).  LNK_OK,
 * or LNK_EINVAL for an unknown LNK_BLAS_KERNEL or one the CPU cannot run. */
int lnk_blas_choose(const char *setting, const char *user_coretype, const char *reexeced,
                    const char **switch_to, char *note, int n);

/* The kernel lnk_blas_choose would switch to in this process, or NULL (for
 * programs that cannot restart; see above).  NULL with lnk_errmsg set for a
 * bad setting. */
const char *lnk_blas_advice(const char *setting, const char *user_coretype);

/* The kernel OpenBLAS uses now. */
const char *lnk_blas_kernel(void);

#ifdef __cplusplus
}
#endif
#endif
