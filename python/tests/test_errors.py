"""Every class of bad input raises lnkit.Error (a ValueError) with a one-line
message naming the problem, and the interpreter goes on: wrong dtype, wrong
shape, NaN and infinity, missing or wrong files, bad configurations, bad
options.  Non-contiguous and read-only inputs are accepted (copied)."""
import os
import subprocess

import numpy as np
import pytest

import lnkit
from conftest import rel_err


@pytest.fixture(scope="module")
def mdv(pre):
    m = lnkit.Model.load(pre.config, pre.weights)
    return m, lnkit.Data(pre.batch), m.load_vector(pre.vector)


def raises(match, f, *a, **kw):
    with pytest.raises(lnkit.Error, match=match) as e:
        f(*a, **kw)
    msg = str(e.value)
    assert "\n" not in msg and msg
    assert isinstance(e.value, ValueError)
    return msg


def test_vector_dtype(mdv):
    m, d, v = mdv
    H = m.hessian(d)
    for bad in (v.astype(np.float32), v.astype(np.int64), v.astype(np.complex128),
                np.array(["x"] * m.n_params), [object()] * m.n_params):
        raises("dtype|float64", m.hvp, d, bad)
        raises("dtype|float64", H.matvec, bad)
    raises("float64", m.hvp, d, None)


def test_vector_shape(mdv):
    m, d, v = mdv
    H = m.hessian(d, block="*.attn.*")
    for bad in (v[:-1], np.append(v, 1.0), v.reshape(1, -1), np.float64(1.0), np.zeros((0,))):
        raises("shape", m.hvp, d, bad)
    raises("shape", H.matvec, v)                    # full vector for a block operator
    raises("shape", m.hvp, d, v, block="*.attn.*")
    raises("shape", setattr, m, "theta", v[:10])


def test_vector_nonfinite(mdv):
    m, d, v = mdv
    for x in (np.nan, np.inf, -np.inf):
        w = v.copy()
        w[1234] = x
        msg = raises("finite|NaN|nan|inf", m.hvp, d, w)
        assert "dec." in msg or "tgt_emb" in msg  # the library names the tensor
        raises("finite|NaN|nan|inf", m.hessian(d, block="dec.0.*").matvec,
               np.where(np.arange(m.hessian(d, block="dec.0.*").shape[0]) == 3, x, 0.0))


def test_nan_in_weights(pre, mdv):
    _, d, _ = mdv
    m = lnkit.Model.load(pre.config, pre.weights)
    m.params["dec.1.attn.wk"][2, 3] = np.nan
    raises("dec.1.attn.wk", m.loss_grad, d)
    raises("dec.1.attn.wk", m.hessian, d)
    raises("dec.1.attn.wk", m.save, pre.path("never.safetensors"))
    assert not os.path.exists(pre.path("never.safetensors"))


def test_noncontiguous_and_readonly_accepted(mdv):
    m, d, v = mdv
    ref = m.hvp(d, v)
    big = np.zeros(2 * m.n_params)
    big[::2] = v
    assert rel_err(m.hvp(d, big[::2]), ref) == 0
    ro = v.copy()
    ro.flags.writeable = False
    assert rel_err(m.hvp(d, ro), ref) == 0
    assert rel_err(m.hvp(d, list(v)), ref) == 0
    assert rel_err(m.hessian(d).matvec(v.reshape(-1, 1)).ravel(), ref) == 0


def test_missing_and_wrong_files(pre, tmp_path):
    raises("no such file", lnkit.Data, tmp_path / "none.safetensors")
    raises("no such file", lnkit.Data, [pre.batch, tmp_path / "none.safetensors"])
    raises("folder", lnkit.Data, tmp_path)
    raises("none.json", lnkit.Model.load, tmp_path / "none.json", pre.weights)
    raises("none.safetensors", lnkit.Model.load, pre.config, tmp_path / "none.safetensors")
    raises("none.safetensors", lnkit.Model.load(pre.config, pre.weights).load_vector,
           tmp_path / "none.safetensors")
    # a file that is not safetensors, as weights and as a batch
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{}{}{}")
    raises("junk", lnkit.Model.load, pre.config, junk)
    m = lnkit.Model.load(pre.config, pre.weights)
    raises("junk", m.loss, lnkit.Data(junk))
    # a batch of ids beyond the vocabulary: the model of another configuration
    other = lnkit.Model({"d": 16, "h": 2, "L": 2, "V": 10, "norm_pos": "pre"})
    raises("tgt", other.loss, lnkit.Data(pre.batch))
    # weights of another configuration
    raises("shape|expected|missing|tensor", other.load_weights, pre.weights)
    # a batch file as weights, weights as a batch
    raises("", lnkit.Model.load, pre.config, pre.batch)
    raises("", m.loss, lnkit.Data(pre.weights))
    raises("file path", lnkit.Data, 12)
    raises("no batch", lnkit.Data, [])


def test_bad_config():
    raises("'d'", lnkit.Model, {"d": "abc"})
    raises("'d'|'h'|divis", lnkit.Model, {"d": 10, "h": 3})
    raises("nope", lnkit.Model, {"nope": 1})
    raises("norm_pos", lnkit.Model, {"norm_pos": "middle"})
    raises("JSON", lnkit.Model, {"d": float("nan")})
    raises("dict", lnkit.Model, "w.json")
    raises("seed", lnkit.Model, {}, seed="x")
    raises("", lnkit.Model, {"d": 2**40})


def test_bad_data_arrays(pre):
    m = lnkit.Model.load(pre.config, pre.weights)
    ids = np.full((2, 5), 5)
    ids[:, 0] = 2
    raises("integer", lnkit.Data.from_arrays, tgt=ids.astype(float))
    raises("2-D", lnkit.Data.from_arrays, tgt=ids[0])
    raises("needs", lnkit.Data.from_arrays)
    bad = ids.copy()
    bad[1, 3] = 99                      # beyond V = 24
    raises("tgt", m.loss, lnkit.Data.from_arrays(tgt=bad))
    bad = ids.copy()
    bad[1, 1:] = 0                      # a row with nothing to score
    raises("row 1", m.loss, lnkit.Data.from_arrays(tgt=bad))
    raises("rows", lnkit.Data.from_arrays, src=ids, tgt=ids[:1])
    raises("chunk", lnkit.Data, pre.batch, chunk=0)
    raises("chunk", lnkit.Data, pre.batch, chunk=1.5)
    raises("chunk", lnkit.Data, pre.batch, chunk=True)
    raises("task", lnkit.Model({"task": "cls", "d": 8, "h": 2, "V": 24}).loss, lnkit.Data(pre.batch))


def test_bad_options(mdv):
    m, d, v = mdv
    raises("operator", m.hessian, d, operator="gauss-newton")
    raises("operator", m.hessian, d, operator=1)
    raises("nothing|match", m.hessian, d, block="enc.*")
    raises("block", m.hessian, d, block=3)
    raises("which", lnkit.eigs, m, d, which="middle")
    raises("k", lnkit.eigs, m, d, k=0)
    raises("k", lnkit.eigs, m, d, k=m.n_params + 1)
    raises("overlap", lnkit.eigs, m, d, k=20, which="both", block="dec.0.ffn.b2,dec.0.attn.bq")
    raises("tol", lnkit.eigs, m, d, tol=-1)
    raises("tol", lnkit.eigs, m, d, tol=float("nan"))
    raises("max_steps", lnkit.eigs, m, d, max_steps=0)
    raises("mode", lnkit.eigs, m, d, mode="fast")
    raises("data", lnkit.eigs, m)
    raises("Model", lnkit.eigs, "m", d)
    raises("cache_mb", m.hessian, d, cache_mb=-1)
    raises("threads", lnkit.set_threads, 0)
    raises("runs", lnkit.density, m, d, runs=0)
    raises("sigma", lnkit.density, m, d, sigma=-1.0)
    raises("data", m.loss, 3.5)
    H = m.hessian(d)
    for bad in (np.empty(m.n_params, np.float32), np.empty(m.n_params + 1),
                np.empty(2 * m.n_params)[::2], v):
        raises("out", H.apply, v, out=bad)
    y = np.empty(m.n_params)
    assert H.apply(v, out=y) is y and np.array_equal(y, m.hvp(d, v))
    H.close()
    raises("closed", H.matvec, v)
    with pytest.raises(KeyError):
        m.params["dec.9.ffn.w2"]
    raises("no tensor", m.offset, "dec.9.ffn.w2")


def test_progress_cancel(mdv):
    m, d, _ = mdv
    raises("cancel", lnkit.eigs, m, d, k=2, tol=1e-14, progress=lambda p: p["step"] >= 3)

    class Stop(Exception):
        pass

    def boom(p):
        raise Stop()
    with pytest.raises(Stop):           # an exception in the callback comes through
        lnkit.eigs(m, d, k=2, progress=boom)
    seen = []
    lnkit.eigs(m, d, k=2, progress=seen.append)
    assert seen and seen[-1]["step"] == len(seen) and len(seen[-1]["top"]) == 2


def test_seed_names_the_parameter():
    """Model(seed=) names its own parameter, not the program's --seed."""
    for bad in (-1, 2**63, 1.5, "3"):
        msg = raises("seed", lnkit.Model, {}, seed=bad)
        assert "--seed" not in msg, msg
    top = lnkit.Model({"d": 8, "h": 2, "L": 1, "V": 10}, seed=2**63 - 1)
    assert top.config["seed"] == 2**63 - 1


def test_threads_range_is_the_programs(tmp_path):
    """set_threads takes what `lnkit --threads` takes and refuses the rest
    with lnkit.Error (never capped silently outside that range)."""
    from conftest import lnkit_bin
    before = lnkit.threads()
    try:
        for n in (0, 1, 2, lnkit.MAX_THREADS, lnkit.MAX_THREADS + 1, 10**6):
            r = subprocess.run([lnkit_bin(), "init", "--d", "8", "--h", "2", "--L", "1", "--V",
                                "10", "--threads", str(n), "-o",
                                str(tmp_path / "w.safetensors"), "--quiet"],
                               capture_output=True, text=True)
            r_ok = r.returncode == 0
            try:
                lnkit.set_threads(n)
                py_ok = True
            except lnkit.Error as e:
                py_ok = False
                assert "threads" in str(e) and str(lnkit.MAX_THREADS) in str(e)
            assert py_ok == r_ok, (n, r.returncode, r.stderr)
        for bad in (True, 2.0, "4", None):
            raises("threads", lnkit.set_threads, bad)
    finally:
        lnkit.set_threads(before)
