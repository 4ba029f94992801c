"""Derivatives of the reference's loss by autograd: the gradient (reverse
mode), H v (reverse over reverse: the gradient of g . v), the Gauss-Newton
product G v = J^T H_out J v (docs/MODEL.md §7: J the Jacobian of the logits,
H_out the Hessian of the loss in the logits), F v = H v - G v, and dense
matrices for small models."""
import torch

from .layout import unflatten
from .model import logits_fn, loss_from_logits, loss_fn


def loss_grad(c, layout, theta_np, tb, create_graph=False):
    theta = torch.tensor(theta_np, dtype=torch.float64, requires_grad=True)
    L = loss_fn(c, unflatten(theta, layout), tb)
    (g,) = torch.autograd.grad(L, theta, create_graph=create_graph)
    return theta, L, g


def hvp(c, layout, theta_np, tb, v_np):
    theta, L, g = loss_grad(c, layout, theta_np, tb, create_graph=True)
    v = torch.as_tensor(v_np, dtype=torch.float64)
    (hv,) = torch.autograd.grad(g @ v, theta, allow_unused=True)
    if hv is None:
        hv = torch.zeros_like(theta)
    return L.detach(), g.detach(), hv.detach()


def hout_apply(c, logits, tb, u):
    """H_out u: per scored position (diag(p) - p p^T) u / N, p = softmax of the
    logits, N the number of scored positions; 0 at unscored positions.  Label
    smoothing adds a term linear in log softmax, whose Hessian in the logits is
    the same (diag(p) - p p^T) times (1 - a) + a = 1, so it plays no part."""
    scored = tb[3]
    p = torch.softmax(logits, dim=-1)
    r = p * u - p * (p * u).sum(-1, keepdim=True)
    r = r * scored.unsqueeze(-1).to(r.dtype)
    return r / scored.sum()


def ggn(c, layout, theta_np, tb, v_np):
    """G v = J^T H_out J v.  J v by the double-backward trick (J^T w is linear
    in w; its derivative in w along v is J v), J^T by one more reverse pass."""
    theta = torch.tensor(theta_np, dtype=torch.float64, requires_grad=True)
    z = logits_fn(c, unflatten(theta, layout), tb)
    w = torch.zeros_like(z, requires_grad=True)
    (jtw,) = torch.autograd.grad(z, theta, grad_outputs=w, create_graph=True)
    v = torch.as_tensor(v_np, dtype=torch.float64)
    (jv,) = torch.autograd.grad(jtw, w, grad_outputs=v)
    u = hout_apply(c, z.detach(), tb, jv)
    (gv,) = torch.autograd.grad(z, theta, grad_outputs=u)
    return gv.detach()


def curvature_products(c, layout, theta_np, tb, v_np):
    """(loss, grad, H v, G v, F v)."""
    L, g, hv = hvp(c, layout, theta_np, tb, v_np)
    gv = ggn(c, layout, theta_np, tb, v_np)
    return L, g, hv, gv, hv - gv


def dense_hessian(c, layout, theta_np, tb, chunk=256):
    """H row by row: e_i^T H = d(g_i)/d theta, by reverse mode through the gradient's
    graph (exact, like the HVPs).  Rows in batches through is_grads_batched (vmap);
    one row at a time if vmap cannot handle an operation."""
    theta, L, g = loss_grad(c, layout, theta_np, tb, create_graph=True)
    n = theta.numel()
    H = torch.zeros(n, n, dtype=torch.float64)
    if not g.requires_grad:
        return H
    try:
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            eye = torch.zeros(e - s, n, dtype=torch.float64)
            eye[torch.arange(e - s), torch.arange(s, e)] = 1.0
            (rows,) = torch.autograd.grad(g, theta, grad_outputs=eye, retain_graph=True,
                                          is_grads_batched=True)
            H[s:e] = rows
        return H
    except RuntimeError:
        pass
    for i in range(n):
        (row,) = torch.autograd.grad(g[i], theta, retain_graph=True, allow_unused=True)
        if row is not None:
            H[i] = row
    return H


def dense_ggn(c, layout, theta_np, tb):
    """G = J^T H_out J from the dense Jacobian of the logits (one reverse pass
    per logit) and H_out written out per scored position: for tests of ggn()
    on small models."""
    theta = torch.tensor(theta_np, dtype=torch.float64, requires_grad=True)
    z = logits_fn(c, unflatten(theta, layout), tb)
    zf = z.reshape(-1)
    n = theta.numel()
    J = torch.zeros(zf.numel(), n, dtype=torch.float64)
    for i in range(zf.numel()):
        (row,) = torch.autograd.grad(zf[i], theta, retain_graph=True, allow_unused=True)
        if row is not None:
            J[i] = row
    C = z.shape[-1]
    p = torch.softmax(z.detach(), dim=-1).reshape(-1, C)
    scored = tb[3].reshape(-1)
    N = float(scored.sum())
    G = torch.zeros(n, n, dtype=torch.float64)
    for r in range(p.shape[0]):
        if not scored[r]:
            continue
        Hr = (torch.diag(p[r]) - torch.outer(p[r], p[r])) / N
        Jr = J[r * C:(r + 1) * C]
        G += Jr.t() @ Hr @ Jr
    return G


def loss_of_logits_hessian_check(c, logits, tb, u):
    """The exact Hessian of the loss in the logits applied to u, by double
    backward (for tests of hout_apply)."""
    z = logits.detach().clone().requires_grad_(True)
    L = loss_from_logits(c, z, tb)
    (gz,) = torch.autograd.grad(L, z, create_graph=True)
    (hz,) = torch.autograd.grad((gz * u).sum(), z)
    return hz
