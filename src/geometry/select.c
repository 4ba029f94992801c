/* Selectability of keys (docs/MODEL.md section 7): is k_i the strict argmax of q.k for
 * some query q, i.e. is k_i outside the convex hull of the other keys?  Decided
 * per key by the l1-distance LP described in include/lnkit/geometry.h, solved
 * with GLPK and checked in double precision through its primal (a hull point)
 * and dual (a separating query) solutions. */
#include <glpk.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/error.h"
#include "lnkit/geometry.h"

/* Scratch of one call, sized for n keys in d dimensions. */
typedef struct {
    int n, d;
    int *ia, *ja;       /* 1-based GLPK triplets */
    double *ar;
    double *q, *lam, *res;
} lpbuf;

static void lp_free(lpbuf *b)
{
    free(b->ia);
    free(b->ja);
    free(b->ar);
    free(b->q);
    free(b->lam);
    free(b->res);
}

static int lp_alloc(lpbuf *b, int n, int d)
{
    memset(b, 0, sizeof *b);
    b->n = n;
    b->d = d;
    size_t ne = (size_t)n * (d + 1) + 2 * (size_t)d + 1;
    b->ia = malloc(sizeof(int) * ne);
    b->ja = malloc(sizeof(int) * ne);
    b->ar = malloc(sizeof(double) * ne);
    b->q = malloc(sizeof(double) * d);
    b->lam = malloc(sizeof(double) * n);
    b->res = malloc(sizeof(double) * d);
    if (!b->ia || !b->ja || !b->ar || !b->q || !b->lam || !b->res) {
        lp_free(b);
        return lnk_error(LNK_ENOMEM, "selectability: out of memory for %d keys of dimension %d",
                         n, d);
    }
    return LNK_OK;
}

/* The scale of key i's relative distance: s_i = max(max_j ||k_j - k_i||_1, max_j ||k_j||_1),
 * the spread of the set seen from k_i or, if larger, the magnitude of the keys (the
 * rounding error a key carries is relative to its magnitude, not to the spread). */
static double scale_of(const double *K, int n, int d, int i)
{
    const double *ki = K + (size_t)i * d;
    double s = 0;
    for (int j = 0; j < n; j++) {
        const double *kj = K + (size_t)j * d;
        double a = 0, m = 0;
        for (int c = 0; c < d; c++) {
            a += fabs(kj[c] - ki[c]);
            m += fabs(kj[c]);
        }
        s = fmax(s, fmax(a, m));
    }
    return s;
}

/* Whitening for the affine-invariant pre-test q = C^{-1} (k_i - c): the Cholesky factor
 * of the keys' covariance C (with a tiny ridge), or 0 if it fails. */
static int whiten_init(const double *K, int n, int d, const double *cen, double *Lc)
{
    for (int a = 0; a < d; a++)
        for (int b = 0; b <= a; b++) {
            double s = 0;
            for (int j = 0; j < n; j++)
                s += (K[(size_t)j * d + a] - cen[a]) * (K[(size_t)j * d + b] - cen[b]);
            Lc[a * d + b] = s / n;
        }
    double tr = 0;
    for (int a = 0; a < d; a++)
        tr += Lc[a * d + a];
    for (int a = 0; a < d; a++)
        Lc[a * d + a] += 1e-12 * tr / d;
    for (int a = 0; a < d; a++) {
        for (int b = 0; b <= a; b++) {
            double s = Lc[a * d + b];
            for (int k = 0; k < b; k++)
                s -= Lc[a * d + k] * Lc[b * d + k];
            if (a == b) {
                if (!(s > 0))
                    return 0;
                Lc[a * d + a] = sqrt(s);
            } else {
                Lc[a * d + b] = s / Lc[b * d + b];
            }
        }
    }
    return 1;
}

/* q = C^{-1} v = L^{-T} L^{-1} v */
static void whiten(const double *Lc, int d, const double *v, double *q)
{
    for (int a = 0; a < d; a++) {
        double s = v[a];
        for (int k = 0; k < a; k++)
            s -= Lc[a * d + k] * q[k];
        q[a] = s / Lc[a * d + a];
    }
    for (int a = d - 1; a >= 0; a--) {
        double s = q[a];
        for (int k = a + 1; k < d; k++)
            s -= Lc[k * d + a] * q[k];
        q[a] = s / Lc[a * d + a];
    }
}

/* Certified lower bound on dist_i / s from a query q: min_j q.(k_i - k_j) / (||q||_inf s)
 * (the best of q and -q); -INFINITY for q = 0. */
static double margin(const double *K, int n, int d, int i, const double *q, double s)
{
    double qi = 0;
    for (int c = 0; c < d; c++)
        qi = fmax(qi, fabs(q[c]));
    if (qi == 0 || s == 0)
        return -INFINITY;
    const double *ki = K + (size_t)i * d;
    double lo = INFINITY, hi = -INFINITY; /* min and max over j of q.(k_i - k_j) */
    for (int j = 0; j < n; j++) {
        if (j == i)
            continue;
        const double *kj = K + (size_t)j * d;
        double a = 0;
        for (int c = 0; c < d; c++)
            a += q[c] * (ki[c] - kj[c]);
        lo = fmin(lo, a);
        hi = fmax(hi, a);
    }
    return fmax(lo, -hi) / (qi * s);
}

static int is_duplicate(const double *K, int n, int d, int i)
{
    const double *ki = K + (size_t)i * d;
    for (int j = 0; j < n; j++) {
        if (j == i)
            continue;
        const double *kj = K + (size_t)j * d;
        int c = 0;
        while (c < d && kj[c] == ki[c])
            c++;
        if (c == d)
            return 1;
    }
    return 0;
}

/* Certificates from GLPK's current solution: *up = the l1 residual of its hull point
 * (lambda clipped to >= 0 and renormalised), an upper bound on dist_i / s; *lo = the
 * margin of its dual query (the row duals of the coordinate rows), a lower bound. */
static void certify(lpbuf *b, glp_prob *lp, const double *K, int i, double s, double *lo,
                    double *up)
{
    int n = b->n, d = b->d, nl = n - 1;
    const double *ki = K + (size_t)i * d;
    double lsum = 0;
    for (int j = 0; j < nl; j++) {
        b->lam[j] = fmax(0.0, glp_get_col_prim(lp, j + 1));
        lsum += b->lam[j];
    }
    *up = INFINITY;
    if (lsum > 0) {
        for (int c = 0; c < d; c++)
            b->res[c] = 0;
        for (int j = 0, col = 0; j < n; j++) {
            if (j == i)
                continue;
            const double *kj = K + (size_t)j * d;
            double l = b->lam[col++] / lsum;
            for (int c = 0; c < d; c++)
                b->res[c] += l * (kj[c] - ki[c]);
        }
        double r = 0;
        for (int c = 0; c < d; c++)
            r += fabs(b->res[c]);
        *up = r / s;
    }
    for (int c = 0; c < d; c++)
        b->q[c] = glp_get_row_dual(lp, c + 1);
    *lo = margin(K, n, d, i, b->q, s);
}

/* K [nd] times the power of two that brings its largest |entry| into [1, 2):
 * exact for every entry above 2^-1021 of the largest (the smaller ones, below
 * any rounding the tests resolve, may lose bits or become 0).  malloc'd. */
static double *scaled(const double *K, size_t nd)
{
    double m = 0;
    for (size_t i = 0; i < nd; i++)
        m = fmax(m, fabs(K[i]));
    int e = m > 0 ? ilogb(m) : 0;
    double *Ks = malloc(sizeof(double) * (nd ? nd : 1));
    if (Ks)
        for (size_t i = 0; i < nd; i++)
            Ks[i] = ldexp(K[i], -e);
    return Ks;
}

/* GLPK reports an internal error by calling its error hook and then abort():
 * the hook jumps back to the simplex call instead, and GLPK's environment
 * (with every problem in it) is freed. */
static _Thread_local jmp_buf *glpk_trap;
static void glpk_fail(void *info)
{
    (void)info;
    if (glpk_trap)
        longjmp(*glpk_trap, 1);
}

static void glpk_quiet(void) { glp_term_out(GLP_OFF); }

/* glp_simplex, or -1 (*lp freed with GLPK's environment) on an internal error. */
static int simplex_guarded(glp_prob *lp, const glp_smcp *parm)
{
    jmp_buf env;
    if (setjmp(env)) {
        glp_error_hook(NULL, NULL);
        glpk_trap = NULL;
        glp_free_env();
        return -1;
    }
    glpk_trap = &env;
    glp_error_hook(glpk_fail, NULL);
    int rc = glp_simplex(lp, parm);
    glp_error_hook(NULL, NULL);
    glpk_trap = NULL;
    return rc;
}

/* The LP for key i (keys translated by -k_i and scaled by 1/s):
 *   min sum_c (p_c + m_c)  s.t.  sum_j lam_j (k_j - k_i)_c / s + p_c - m_c = 0  (c = 1..d),
 *                                sum_j lam_j = 1,  lam, p, m >= 0  (j != i).
 * Its value is dist_i / s.  GLPK's simplex decides optimality within its tolerances
 * (primal and dual feasibility 1e-7 by default, too coarse here), so they are set to
 * 1e-12 and the decision rests on the certificates [lo, up] of its solution.  When they
 * straddle tol, the LP is solved again from the standard basis with the dual simplex
 * and tolerances 1e-14, then with GLPK's defaults, keeping the tightest certified
 * interval; an attempt that hits its iteration limit (the primal simplex can cycle at
 * tolerance 1e-12) also moves on to the next.  (glp_exact is no help: it first rounds the double data to fractions
 * within a relative 1e-9.)  *dist = the LP value kept inside [lo, up]; *ambiguous = 1
 * if [lo, up] still contains tol. */
static int solve_lp(lpbuf *b, const double *K, int i, double s, double tol, double *dist,
                    double *lower, int *ambiguous)
{
    int n = b->n, d = b->d, nl = n - 1, ne = 0;
    const double *ki = K + (size_t)i * d;
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, d + 1);
    for (int c = 1; c <= d; c++)
        glp_set_row_bnds(lp, c, GLP_FX, 0.0, 0.0);
    glp_set_row_bnds(lp, d + 1, GLP_FX, 1.0, 1.0);
    glp_add_cols(lp, nl + 2 * d);
    for (int j = 0, col = 1; j < n; j++) {
        if (j == i)
            continue;
        const double *kj = K + (size_t)j * d;
        glp_set_col_bnds(lp, col, GLP_LO, 0.0, 0.0);
        for (int c = 0; c < d; c++) {
            double v = (kj[c] - ki[c]) / s;
            if (v != 0) {
                ne++;
                b->ia[ne] = c + 1;
                b->ja[ne] = col;
                b->ar[ne] = v;
            }
        }
        ne++;
        b->ia[ne] = d + 1;
        b->ja[ne] = col;
        b->ar[ne] = 1.0;
        col++;
    }
    for (int c = 0; c < d; c++)
        for (int sg = 0; sg < 2; sg++) {
            int col = nl + 1 + 2 * c + sg;
            glp_set_col_bnds(lp, col, GLP_LO, 0.0, 0.0);
            glp_set_obj_coef(lp, col, 1.0);
            ne++;
            b->ia[ne] = c + 1;
            b->ja[ne] = col;
            b->ar[ne] = sg ? -1.0 : 1.0;
        }
    glp_load_matrix(lp, ne, b->ia, b->ja, b->ar);
    double lo = -INFINITY, up = INFINITY, val = NAN;
    int rc = 0, status = 0, solved = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        glp_smcp parm;
        glp_init_smcp(&parm);
        parm.msg_lev = GLP_MSG_OFF;
        if (attempt == 0) {
            parm.tol_bnd = parm.tol_dj = 1e-12;
        } else {
            glp_std_basis(lp);
            parm.meth = GLP_DUALP;
            if (attempt == 1)
                parm.tol_bnd = parm.tol_dj = 1e-14;
        }
        /* tight tolerances can make the primal simplex cycle: an iteration limit (a few
         * times the LP's size; deterministic, unlike a time limit) moves on */
        parm.it_lim = 20 * (nl + 3 * d + 1) + 100;
        rc = simplex_guarded(lp, &parm);
        if (rc < 0)
            return lnk_error(LNK_EINVAL, "selectability: GLPK failed internally for key %d of %d "
                             "(an assertion of its simplex); the keys' coordinates may span too "
                             "many orders of magnitude", i, n);
        status = glp_get_status(lp);
        if (rc == 0 && status == GLP_OPT) {
            double l, u;
            certify(b, lp, K, i, s, &l, &u);
            lo = fmax(lo, l);
            up = fmin(up, u);
            val = glp_get_obj_val(lp);
            solved = 1;
        }
        if (solved && !(lo <= tol && up > tol))
            break;
    }
    glp_delete_prob(lp);
    if (!solved)
        return lnk_error(LNK_EINVAL,
                         "selectability: GLPK simplex failed for key %d of %d (return code %d, "
                         "status %d)", i, n, rc, status);
    *dist = fmin(fmax(val, fmax(lo, 0.0)), up);
    *lower = lo;
    *ambiguous = lo <= tol && up > tol;
    return LNK_OK;
}

static int check_input(const double *K, int n, int d)
{
    if (n < 1 || d < 1)
        return lnk_error(LNK_EINVAL, "selectability: %d keys of dimension %d: need n >= 1, d >= 1",
                         n, d);
    for (int i = 0; i < n; i++)
        for (int c = 0; c < d; c++)
            if (!isfinite(K[(size_t)i * d + c]))
                return lnk_error(LNK_ENONFINITE, "selectability: key %d, coordinate %d is %g", i,
                                 c, K[(size_t)i * d + c]);
    return LNK_OK;
}

static int hull_dist(const double *K, int n, int d, int i, double tol, double *dist,
                     int *ambiguous);

int lnk_geom_hull_dist(const double *K, int n, int d, int i, double tol, double *dist,
                       int *ambiguous)
{
    int st = check_input(K, n, d);
    if (st)
        return st;
    if (i < 0 || i >= n)
        return lnk_error(LNK_EINVAL, "hull distance: key %d of %d", i, n);
    double *Ks = scaled(K, (size_t)n * d);
    if (!Ks)
        return lnk_error(LNK_ENOMEM, "hull distance: out of memory for %d keys", n);
    st = hull_dist(Ks, n, d, i, tol, dist, ambiguous);
    free(Ks);
    return st;
}

static int hull_dist(const double *K, int n, int d, int i, double tol, double *dist,
                     int *ambiguous)
{
    int st;
    if (tol <= 0)
        tol = LNK_GEOM_SEL_TOL;
    int ex = 0;
    double s = scale_of(K, n, d, i);
    if (n == 1 || s == 0) {
        *dist = n == 1 ? 1.0 : 0.0;
    } else {
        glpk_quiet();
        lpbuf b;
        if ((st = lp_alloc(&b, n, d)))
            return st;
        double lo;
        st = solve_lp(&b, K, i, s, tol, dist, &lo, &ex);
        lp_free(&b);
        if (st)
            return st;
    }
    if (ambiguous)
        *ambiguous = ex;
    return LNK_OK;
}

static int selectable(const double *K, int n, int d, double tol, int *sel,
                      lnk_geom_sel_info *info, lnk_geom_progress_fn *fn, void *ctx);

int lnk_geom_selectable(const double *K, int n, int d, double tol, int *sel,
                        lnk_geom_sel_info *info)
{
    return lnk_geom_selectable_progress(K, n, d, tol, sel, info, NULL, NULL);
}

int lnk_geom_selectable_progress(const double *K, int n, int d, double tol, int *sel,
                                 lnk_geom_sel_info *info, lnk_geom_progress_fn *fn, void *ctx)
{
    int st = check_input(K, n, d);
    if (st)
        return st;
    double *Ks = scaled(K, (size_t)n * d);
    if (!Ks)
        return lnk_error(LNK_ENOMEM, "selectability: out of memory for %d keys", n);
    st = selectable(Ks, n, d, tol, sel, info, fn, ctx);
    free(Ks);
    return st;
}

static int selectable(const double *K, int n, int d, double tol, int *sel,
                      lnk_geom_sel_info *info, lnk_geom_progress_fn *fn, void *ctx)
{
    lnk_geom_sel_info loc = {0, 0, 0, 0, INFINITY};
    int st = LNK_OK;
    if (tol <= 0)
        tol = LNK_GEOM_SEL_TOL;
    if (n == 1) {
        sel[0] = 1;
        loc.n_pretest = 1;
        if (info)
            *info = loc;
        return LNK_OK;
    }
    double *cen = calloc((size_t)d, sizeof(double)), *q = malloc(sizeof(double) * 2 * d);
    /* the whitened pre-test pays off for small d with many keys (anisotropic sets) */
    int white = n > d + 1 && d <= 64;
    double *Lc = white ? malloc(sizeof(double) * d * d) : NULL;
    lpbuf b = {0};
    if (!cen || !q || (white && !Lc) || (st = lp_alloc(&b, n, d))) {
        free(cen);
        free(q);
        free(Lc);
        return st ? st : lnk_error(LNK_ENOMEM, "selectability: out of memory");
    }
    for (int j = 0; j < n; j++)
        for (int c = 0; c < d; c++)
            cen[c] += K[(size_t)j * d + c] / n;
    if (white)
        white = whiten_init(K, n, d, cen, Lc);
    const double near = 1e3 * tol;
    /* the report after each key, those decided by a pre-test (continue) too */
    for (int i = 0; i < n && !st; i++, fn ? fn(ctx, i, n) : (void)0) {
        const double *ki = K + (size_t)i * d;
        double s = scale_of(K, n, d, i);
        if (s == 0 || is_duplicate(K, n, d, i)) {
            sel[i] = 0;
            loc.n_pretest++;
            continue;
        }
        /* Pre-tests: a query with a certified margin beyond the near-boundary band:
         * q = k_i (the largest key wins), q = k_i - centroid, q = C^{-1} (k_i - centroid). */
        if (margin(K, n, d, i, ki, s) > near) {
            sel[i] = 1;
            loc.n_pretest++;
            continue;
        }
        for (int c = 0; c < d; c++)
            q[c] = ki[c] - cen[c];
        if (margin(K, n, d, i, q, s) > near) {
            sel[i] = 1;
            loc.n_pretest++;
            continue;
        }
        if (white) {
            whiten(Lc, d, q, q + d);
            if (margin(K, n, d, i, q + d, s) > near) {
                sel[i] = 1;
                loc.n_pretest++;
                continue;
            }
        }
        glpk_quiet();
        double dist, lo;
        int ex;
        st = solve_lp(&b, K, i, s, tol, &dist, &lo, &ex);
        if (st)
            break;
        loc.n_lp++;
        loc.n_ambiguous += ex;
        sel[i] = dist > tol;
        if (sel[i]) {
            if (dist <= near)
                loc.n_near++;
            loc.min_sel_dist = fmin(loc.min_sel_dist, ex ? dist : lo);
        }
    }
    free(cen);
    free(q);
    free(Lc);
    lp_free(&b);
    if (!st && info)
        *info = loc;
    return st;
}

int lnk_geom_count_unselectable(const double *K, int n, int d, double tol, int *count,
                                lnk_geom_sel_info *info)
{
    int *sel = malloc(sizeof(int) * (n > 0 ? n : 1));
    if (!sel)
        return lnk_error(LNK_ENOMEM, "selectability: out of memory");
    int st = lnk_geom_selectable(K, n, d, tol, sel, info);
    if (!st) {
        *count = 0;
        for (int i = 0; i < n; i++)
            *count += !sel[i];
    }
    free(sel);
    return st;
}
