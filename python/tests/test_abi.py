"""The structures the package mirrors in ctypes (lnkit/_lib.py) have the C
headers' sizes and field offsets: a C program built against include/lnkit
prints them (needs cc; the headers of the clone, or $LNKIT_INCLUDE)."""
import ctypes
import os
import shutil
import subprocess

import pytest

from lnkit import _lib
from conftest import ROOT

STRUCTS = {"lnk_tensor_info": _lib.TensorInfo, "lnk_layout": _lib.Layout,
           "lnk_batch": _lib.Batch, "lnk_block": _lib.Block, "lnk_operator": _lib.Operator,
           "lnk_eigs_progress": _lib.EigsProgress, "lnk_eigs_opts": _lib.EigsOpts,
           "lnk_eigs_result": _lib.EigsResult, "lnk_slq_opts": _lib.SlqOpts,
           "lnk_slq_result": _lib.SlqResult, "lnk_trace_opts": _lib.TraceOpts,
           "lnk_trace_result": _lib.TraceResult, "lnk_blockstat_opts": _lib.BlockstatOpts,
           "lnk_frob_result": _lib.FrobResult, "lnk_blockstat": _lib.Blockstat,
           "lnk_blockstat_names": _lib.BlockstatNames, "lnk_digest": _lib.Digest}


def test_struct_layouts(tmp_path):
    cc = shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler")
    inc = os.environ.get("LNKIT_INCLUDE", os.path.join(ROOT, "include"))
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "lnkit/lnkit.h"',
             'int main(void) {',
             'printf("lnk_config %zu\\n", sizeof(lnk_config));',
             'printf("LNK_NAME_MAX %d\\n", LNK_NAME_MAX);',
             'printf("enums %d %d %d %d %d %d %d %d\\n", LNK_LANCZOS_FULL, LNK_LANCZOS_LIGHT, '
             'LNK_REORTH_PARTIAL, LNK_REORTH_ALWAYS, LNK_VEC_FLAT, LNK_VEC_NAMED, '
             'LNK_EIGS_CANCELLED, LNK_SLQ_RADEMACHER);',
             'printf("version %s\\n", LNK_VERSION);',
             'printf("trace %d %d pad %.17g\\n", LNK_TRACE_HUTCHINSON, LNK_TRACE_HUTCHPP, '
             'LNK_SLQ_PAD);']
    for cname, py in STRUCTS.items():
        lines.append('printf("%s %%zu\\n", sizeof(%s));' % (cname, cname))
        for f in py._fields_:
            lines.append('printf("%s.%s %%zu\\n", offsetof(%s, %s));' % (cname, f[0], cname, f[0]))
    lines.append("return 0; }")
    src = tmp_path / "abi.c"
    src.write_text("\n".join(lines))
    subprocess.run([cc, "-std=c11", "-I", inc, str(src), "-o", str(tmp_path / "abi")], check=True)
    out = dict(line.rsplit(" ", 1) for line in
               subprocess.run([str(tmp_path / "abi")], capture_output=True, text=True,
                              check=True).stdout.splitlines() if not line.startswith(("enums", "trace")))
    enums = subprocess.run([str(tmp_path / "abi")], capture_output=True, text=True).stdout
    assert "enums %d %d %d %d %d %d %d %d" % (
        _lib.LNK_LANCZOS_FULL, _lib.LNK_LANCZOS_LIGHT, _lib.LNK_REORTH_PARTIAL,
        _lib.LNK_REORTH_ALWAYS, _lib.LNK_VEC_FLAT, _lib.LNK_VEC_NAMED, 3,
        _lib.LNK_SLQ_RADEMACHER) in enums
    assert "trace %d %d pad %.17g" % (_lib.LNK_TRACE_HUTCHINSON, _lib.LNK_TRACE_HUTCHPP,
                                      _lib.LNK_SLQ_PAD) in enums
    assert int(out["lnk_config"]) <= _lib.CONFIG_BYTES
    assert int(out["LNK_NAME_MAX"]) == _lib.LNK_NAME_MAX
    assert out["version"].rsplit(".", 1)[0] == _lib.SOVERSION
    import lnkit
    assert out["version"] == lnkit.__version__
    for cname, py in STRUCTS.items():
        assert int(out[cname]) == ctypes.sizeof(py), cname
        for f in py._fields_:
            assert int(out["%s.%s" % (cname, f[0])]) == getattr(py, f[0]).offset, (cname, f[0])
