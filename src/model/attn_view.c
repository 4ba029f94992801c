/* Read-only views of the attention units' activations after an evaluation
 * (see include/lnkit/model.h): what the geometry module reads, so that it
 * needs none of the workspace's internals. */
#include "lnkit/error.h"
#include "lnkit/model.h"
#include "model/workspace.h"

static const lnk_stack *mstack(const lnk_model *m, int s) { return s ? &m->dec : &m->enc; }

int lnk_model_attn_units(const lnk_model *m, lnk_attn_unit *out, int max)
{
    int n = 0;
    for (int s = 0; s < 2; s++) {
        const lnk_stack *st = mstack(m, s);
        for (int k = 0; k < st->n_units; k++) {
            if (st->u[k].kind == UNIT_FFN)
                continue;
            if (out && n < max)
                out[n] = (lnk_attn_unit){s, k, st->u[k].block, st->u[k].kind == UNIT_CROSS_ATTN,
                                         st->u[k].causal};
            n++;
        }
    }
    return n;
}

const lnk_model *lnk_workspace_model(const lnk_workspace *ws) { return ws->m; }

int lnk_workspace_attn(const lnk_workspace *ws, int stack, int unit, lnk_attn_view *v)
{
    if (stack < 0 || stack > 1 || unit < 0 || unit >= mstack(ws->m, stack)->n_units ||
        mstack(ws->m, stack)->u[unit].kind == UNIT_FFN)
        return lnk_error(LNK_EINVAL, "geometry: %s unit %d is not an attention unit of the model",
                         stack ? "decoder" : "encoder", unit);
    const lnk_primal *pr = ws->pr;
    if (!pr->valid)
        return lnk_error(LNK_EINVAL, "geometry: the workspace holds no evaluated batch");
    const lnk_stack *ms = mstack(ws->m, stack);
    int cross = ms->u[unit].kind == UNIT_CROSS_ATTN;
    const stack_buf *sb = stack ? &pr->dec : &pr->enc;
    const unit_buf *ub = &sb->a.u[unit];
    /* key side: the unit's own stack, or the encoder output for cross-attention */
    const stack_buf *kb = cross ? &pr->enc : sb;
    v->B = pr->B;
    v->Tq = stack ? pr->Tdec : pr->Tenc;
    v->Tk = cross ? pr->Tenc : v->Tq;
    if (cross) { /* the encoder output: its final norm's, or its last unit's N_post's */
        int ne = pr->enc.n_units;
        const lnk_unit *last = &ws->m->enc.u[ne - 1];
        v->norm_in = ws->m->enc.fg >= 0 ? pr->enc.a.x[ne]
                     : last->npost.on   ? pr->enc.a.u[ne - 1].s
                                        : pr->enc.a.z;
        v->norm_out = pr->enc.a.z;
    } else if (ms->u[unit].nin.on) { /* the unit's input norm */
        v->norm_in = sb->a.x[unit];
        v->norm_out = ub->nin.out;
    } else { /* the stream itself: the previous unit's N_post output, if it has one */
        int prev = unit > 0 && ms->u[unit - 1].npost.on;
        v->norm_in = prev ? sb->a.u[unit - 1].s : sb->a.x[unit];
        v->norm_out = sb->a.x[unit];
    }
    v->q = ub->q;
    v->k = ub->k;
    v->qn = ub->qn;
    v->kn = ub->kn;
    v->a = ub->a;
    v->qpad = sb->kmask;
    v->kpad = kb->kmask;
    return LNK_OK;
}
