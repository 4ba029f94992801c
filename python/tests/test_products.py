"""Products through Python equal the lnkit program's on the same files to
rounding: loss and gradient (lnkit eval), H v (lnkit hvp), extremal
eigenvalues (lnkit eigs, several files, chunks, a block), initial weights
(lnkit init); for lm, seq2seq and cls models, Post-LN and Pre-LN."""
import json

import numpy as np
import pytest

import lnkit
from conftest import run, read_eigs_csv, rel_err, read_safetensors, MODELS, read_record, \
    config_sha256, same_bytes, RECORD_KEYS, CONFIG_ITEM

TOL = 1e-12


def test_loss_grad_equals_cli(files):
    m = lnkit.Model.load(files.config, files.weights)
    out = json.loads(run("eval", "--config", files.config, "--weights", files.weights,
                         "--batch", files.batch, "--json", "--grad-out", files.path("g.safetensors")))
    loss, g = m.loss_grad(lnkit.Data(files.batch))
    g_cli = m.load_vector(files.path("g.safetensors"))
    assert abs(loss - out["loss"]) <= TOL * abs(out["loss"])
    assert rel_err(g, g_cli) <= TOL
    assert m.loss(lnkit.Data(files.batch)) == pytest.approx(loss, rel=TOL)
    for name, norm in out["grad_norms"].items():
        o, s, _ = m.offset(name)
        assert np.linalg.norm(g[o:o + s]) == pytest.approx(norm, rel=1e-12, abs=1e-300)
    assert lnkit.Data(files.batch).n_scored(m) == out["n_scored"]


def test_hvp_equals_cli(files):
    m = lnkit.Model.load(files.config, files.weights)
    hv_path = files.path("hv.safetensors")
    run("hvp", "--config", files.config, "--weights", files.weights, "--batch", files.batch,
        "--vector", files.vector, "-o", hv_path, "--quiet")
    v = m.load_vector(files.vector)
    hv = m.hvp(lnkit.Data(files.batch), v)
    assert hv.dtype == np.float64 and hv.shape == (m.n_params,) and hv.flags.c_contiguous
    assert rel_err(hv, m.load_vector(hv_path)) <= TOL
    H = m.hessian(files.batch)
    assert rel_err(H @ v, hv) <= TOL
    assert rel_err(H.matvec(v), hv) <= TOL  # the kept primal pass: same numbers
    assert H.n_products == 2


def test_eigs_equals_cli(files):
    """Both ends, two files cut into chunks of 2 rows: the data-set Hessian."""
    m = lnkit.Model.load(files.config, files.weights)
    csv_path = files.path("eigs.csv")
    run("eigs", "--config", files.config, "--weights", files.weights, "--batch", files.batch,
        "--batch", files.batch2, "--chunk", 2, "-k", 3, "--which", "both", "--tol", "1e-10",
        "-o", csv_path, "--quiet")
    top, bottom, res = read_eigs_csv(csv_path)
    data = lnkit.Data([files.batch, files.batch2], chunk=2)
    assert data.n_chunks(m) == 2 + 3
    r = lnkit.eigs(m, data, k=3, which="both", tol=1e-10)
    assert list(r.which) == ["top"] * 3 + ["bottom"] * 3
    assert rel_err(r.top, top) <= TOL and rel_err(r.bottom, bottom) <= TOL
    assert r.converged.all() and np.all(r.residuals <= 1e-10 * r.scale)
    assert np.all(np.diff(r.top) <= 0) and np.all(np.diff(r.bottom) >= 0)


def test_block_eigs_equals_cli(pre):
    m = lnkit.Model.load(pre.config, pre.weights)
    csv_path = pre.path("eigs_block.csv")
    run("eigs", "--config", pre.config, "--weights", pre.weights, "--batch", pre.batch,
        "--block", "*.ffn.w2,dec.1.*", "-k", 2, "--tol", "1e-10", "-o", csv_path, "--quiet")
    top, _, _ = read_eigs_csv(csv_path)
    r = lnkit.eigs(m, pre.batch, k=2, tol=1e-10, block="*.ffn.w2,dec.1.*")
    assert rel_err(r.top, top) <= TOL
    H = m.hessian(pre.batch, block="*.ffn.w2,dec.1.*")
    assert H.tensors == [t for t in m.names if t.endswith("ffn.w2") or t.startswith("dec.1.")]
    assert H.shape[0] == sum(m.offset(t)[1] for t in H.tensors)
    # the block product is the full product's block: P^T H P x
    x = np.random.default_rng(1).standard_normal(H.shape[0])
    full = m.hvp(pre.batch, H.scatter(x))
    assert rel_err(H @ x, H.gather(full)) <= TOL
    assert rel_err(m.hvp(pre.batch, x, block="*.ffn.w2,dec.1.*"), H @ x) <= TOL


def test_chunks_are_the_token_weighted_mean(pre):
    """One file cut into chunks of 1 row = the whole file (exact data-set mean)."""
    m = lnkit.Model.load(pre.config, pre.weights)
    v = m.load_vector(pre.vector)
    whole, chunked = lnkit.Data(pre.batch), lnkit.Data(pre.batch, chunk=1)
    assert chunked.n_chunks(m) == 4
    l1, g1 = m.loss_grad(whole)
    l2, g2 = m.loss_grad(chunked)
    assert l2 == pytest.approx(l1, rel=1e-13) and rel_err(g2, g1) <= 1e-12
    assert rel_err(m.hvp(chunked, v), m.hvp(whole, v)) <= 1e-12


def read_batch_flags(files):
    for name, (init, batch) in MODELS.items():
        if files.init_flags == init:
            return dict(zip(batch[::2], batch[1::2]))
    raise KeyError(files.config)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_init_equals_cli(folder, name):
    """Model(config, seed=...) makes the weights `lnkit init` makes, bit for bit."""
    init, _ = MODELS[name]
    flags = dict(zip(init[::2], init[1::2]))
    cfg = {k.lstrip("-").replace("-", "_"): v for k, v in flags.items() if k != "--seed"}
    m = lnkit.Model(cfg, seed=flags["--seed"])
    path = folder / ("init_%s.safetensors" % name)
    run("init", *init, "-o", path, "--quiet")
    ref = lnkit.Model.load(str(path).replace(".safetensors", ".json"), path)
    assert m.n_params == ref.n_params and m.names == ref.names
    assert np.array_equal(m.theta, ref.theta)
    assert m.config == ref.config


def test_arrays_and_synthetic_equal_files(files):
    """Data.from_arrays of a batch file's arrays (read here, not by the library)
    and Data.synthetic give the loss and products of the file itself."""
    m = lnkit.Model.load(files.config, files.weights)
    arrays = read_safetensors(files.batch)
    a = lnkit.Data.from_arrays(**{k: arrays[k].astype(np.int32) for k in arrays})
    f = lnkit.Data(files.batch)
    assert m.loss(a) == m.loss(f)
    v = m.load_vector(files.vector)
    assert np.array_equal(m.hvp(a, v), m.hvp(f, v))
    b = read_batch_flags(files)
    syn = lnkit.Data.synthetic(m, rows=b["--rows"], len=b["--len"], rng_seed=1)
    assert m.loss(syn) == m.loss(f)


def test_save_roundtrip(pre, tmp_path):
    m = lnkit.Model.load(pre.config, pre.weights)
    m.params["dec.0.ffn.w2"][0, 0] += 0.25
    m.save(tmp_path / "x.safetensors", tmp_path / "x.json")
    m2 = lnkit.Model.load(tmp_path / "x.json", tmp_path / "x.safetensors")
    assert np.array_equal(m2.theta, m.theta)
    # the configuration file is the one lnkit init wrote for this model, byte for byte
    with open(tmp_path / "x.json", "rb") as a, open(pre.config, "rb") as b:
        assert a.read() == b.read()
    # the CLI reads them too
    out = json.loads(run("eval", "--config", tmp_path / "x.json", "--weights",
                         tmp_path / "x.safetensors", "--batch", pre.batch, "--json"))
    assert out["loss"] == pytest.approx(m.loss(pre.batch), rel=TOL)


def test_operators_equal_cli(files):
    """G v and F v (--operator ggn|functional) equal lnkit hvp's; G + F = H;
    G is positive semidefinite along random directions."""
    m = lnkit.Model.load(files.config, files.weights)
    v = m.load_vector(files.vector)
    out = {}
    for op in ("ggn", "functional"):
        p = files.path(f"{op}.safetensors")
        run("hvp", "--config", files.config, "--weights", files.weights, "--batch", files.batch,
            "--vector", files.vector, "--operator", op, "-o", p, "--quiet")
        out[op] = m.hessian(files.batch, operator=op) @ v
        assert rel_err(out[op], m.load_vector(p)) <= TOL
    hv = m.hessian(files.batch) @ v
    assert rel_err(out["ggn"] + out["functional"], hv) <= 1e-12
    G = m.hessian(files.batch, operator="ggn")
    assert G.operator == "ggn"
    rng = np.random.default_rng(5)
    for _ in range(3):
        x = rng.standard_normal(m.n_params)
        gx = G @ x
        assert x @ gx >= -1e-12 * np.linalg.norm(x) * np.linalg.norm(gx)


def _with_metadata(src, dst, md):
    """src's tensors under another __metadata__ (None: none), the header
    written as lnkit writes one."""
    import struct
    raw = open(src, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    head.pop("__metadata__", None)
    if md is not None:
        head = {"__metadata__": md, **head}
    t = json.dumps(head, separators=(",", ":")).encode()
    t += b" " * ((8 - len(t) % 8) % 8)
    open(dst, "wb").write(struct.pack("<Q", len(t)) + t + raw[8 + n:])


def test_load_vector_with_and_without_record(pre):
    """A gradient file of lnkit eval carries its record (docs/MODEL.md
    section 9); Model.load_vector reads it, and the same tensors with foreign
    or no metadata, alike; Model.save_vector's files (their own record) too."""
    m = lnkit.Model.load(pre.config, pre.weights)
    g_path = pre.path("g_rec.safetensors")
    run("eval", "--config", pre.config, "--weights", pre.weights, "--batch", pre.batch,
        "--grad-out", g_path, "-o", pre.path("g_rec.csv"), "--quiet")
    rec = read_record(g_path)
    # the weights come from the file: the config's init seed did not make them
    assert rec["command"] == "lnkit eval" and rec["seeds"] == {}
    g = m.load_vector(g_path)
    for i, other in enumerate([None, {"format": "pt", "lnkit": "not json {"}]):
        p = pre.path("g_md%d.safetensors" % i)
        _with_metadata(g_path, p, other)
        assert np.array_equal(m.load_vector(p), g)
    p = pre.path("g_saved.safetensors")
    m.save_vector(p, g, named=True)
    assert np.array_equal(m.load_vector(p), g)


def test_save_record(tmp_path):
    """Model.save writes the embedded record (docs/MODEL.md section 9): its keys
    in order, this call, and, for lnkit's initialisation, all else as `lnkit
    init` records it for the same configuration (the program's own file: the
    configuration's SHA-256, the seed "init"), the checksum also by the
    section's rule from init's configuration file; "init" only while the
    weights are the initialisation bit for bit; the same model, the same bytes."""
    init, _ = MODELS["post_lm"]
    flags = dict(zip(init[::2], init[1::2]))
    cfg = {k.lstrip("-").replace("-", "_"): v for k, v in flags.items() if k != "--seed"}
    m = lnkit.Model(cfg, seed=flags["--seed"])
    ref = tmp_path / "init.safetensors"
    run("init", *init, "-o", ref, "--quiet")
    c_rec = read_record(ref)
    a, b = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    m.save(a)
    m.save(b, tmp_path / "b.json")
    rec = read_record(a)
    assert list(rec) == RECORD_KEYS
    assert rec["command"] == "python: lnkit.Model.save"
    assert {**rec, "command": "lnkit init"} == c_rec
    assert rec["identity"] == {CONFIG_ITEM: config_sha256(tmp_path / "init.json")}
    assert rec["seeds"] == {"init": flags["--seed"]}
    assert same_bytes(a, b)
    theta0 = m.theta.copy()
    # weights set in Python: no seed made them; they read back the same
    m.params["dec.0.ffn.w2"][0, 0] += 0.25
    m.save(a)
    m.save(b)
    rec = read_record(a)
    assert rec["seeds"] == {} and rec["identity"] == c_rec["identity"]
    assert rec["content"] == "weights set in Python (not the configuration's initialisation)"
    assert same_bytes(a, b)
    assert np.array_equal(lnkit.Model.load(tmp_path / "b.json", a).theta, m.theta)
    # the initialisation again, however it came (set, or loaded from init's file)
    m.theta = theta0
    m.save(a)
    assert read_record(a)["seeds"] == {"init": flags["--seed"]}
    loaded = lnkit.Model.load(tmp_path / "init.json", ref)
    loaded.save(b)
    assert same_bytes(a, b)
    # bit for bit: a zero of the initialisation made -0.0 is a change
    zero = np.flatnonzero(theta0 == 0)[0]
    m.theta[zero] = -0.0
    m.save(a)
    assert read_record(a)["seeds"] == {}


def test_save_vector_record(pre, tmp_path):
    """Model.save_vector's record: this call, the layout in words, the
    configuration's SHA-256 as `lnkit vector` records it for the same
    configuration, no seed; the same vector, the same bytes; it reads back."""
    m = lnkit.Model.load(pre.config, pre.weights)
    v = m.load_vector(pre.vector)
    c_rec = read_record(pre.vector)      # lnkit vector --random --rng-seed 7
    for named, words in ((False, "one tensor 'v'"),
                         (True, "the named tensors (docs/MODEL.md section 6)")):
        a, b = tmp_path / ("a%d.safetensors" % named), tmp_path / ("b%d.safetensors" % named)
        m.save_vector(a, v, named=named)
        m.save_vector(b, v.copy(), named=named)
        rec = read_record(a)
        assert list(rec) == RECORD_KEYS
        assert rec["command"] == "python: lnkit.Model.save_vector"
        assert rec["content"] == "a vector given to save_vector, as " + words
        assert rec["identity"] == {CONFIG_ITEM: c_rec["identity"][CONFIG_ITEM]}
        assert rec["identity"][CONFIG_ITEM] == config_sha256(pre.config)
        assert rec["producer"] == c_rec["producer"] and rec["git_commit"] == c_rec["git_commit"]
        assert rec["seeds"] == {}
        assert same_bytes(a, b)
        assert np.array_equal(m.load_vector(a), v)
