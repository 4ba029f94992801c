"""Independent PyTorch (float64) reference of the transformer of docs/MODEL.md
and issue 32's variants, written from the contract and the papers (not from
lnkit's C sources): loss, gradient, H v, G v, F v, dense matrices, and the
same model built from torch.nn's modules where torch.nn expresses it.

Modules: base (constants, RefError), files (safetensors), config (MODEL.md
§8), layout (§6), model (§2-§4), derivs (autograd products), nnmodel
(torch.nn's layers), pairwise (the covering set of configurations).
tests/ref_torch.py is the command line and re-exports the names below."""
from .base import PAD, UNK, BOS, EOS, RefError
from .files import st_read, st_write
from .config import resolve_config, placement, deepnorm_constants, FINAL_NORM
from .layout import param_layout, n_params, unflatten, flatten_named
from .model import (sinusoidal_pe, embed, rope, block_norm, mha, ffn, gelu, silu, encoder,
                    decoder, check_batch, logits_fn, loss_from_logits, loss_fn)
from .derivs import (loss_grad, hvp, ggn, hout_apply, curvature_products, dense_hessian,
                     dense_ggn)

__all__ = ["PAD", "UNK", "BOS", "EOS", "RefError", "st_read", "st_write", "resolve_config",
           "placement", "deepnorm_constants", "FINAL_NORM", "param_layout", "n_params",
           "unflatten", "flatten_named", "sinusoidal_pe", "embed", "rope", "block_norm",
           "mha", "ffn", "gelu", "silu", "encoder", "decoder", "check_batch",
           "logits_fn", "loss_from_logits", "loss_fn", "loss_grad", "hvp", "ggn",
           "hout_apply", "curvature_products", "dense_hessian", "dense_ggn"]
